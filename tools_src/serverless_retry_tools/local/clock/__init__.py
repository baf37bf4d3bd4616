"""The logical clock (ground floor): :mod:`.held_clock`, the clock that never passes a due event not
dispatched yet, and :mod:`.clock_holds`, what it waits for. Pure of moto and of the runtime, so the
emulator (which serves it) and the runtime (which reads and holds it) both build on it."""
