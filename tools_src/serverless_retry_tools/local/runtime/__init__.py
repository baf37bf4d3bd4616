"""The local runtime: what moto stores but never runs, run against the emulator through the AWS API
(:mod:`.runtime`): SQS event source mappings, Scheduler schedules, Pipes (:mod:`.pipes`),
asynchronous invocations (:mod:`.async_runner`), stream mappings (:mod:`.streams`), and the
deployed functions in worker processes (:mod:`.functions`, :mod:`.worker`). Imports only the ground
floor, never the emulator."""
