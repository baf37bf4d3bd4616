"""``serverless-retry demo``: the examples told end to end on the emulator and runtime. The frame the
demos share (:mod:`.demo_frame`, :mod:`.demo_queues`, :mod:`.demo_archive`), each story
(:mod:`.scheduled_demo`, :mod:`.native_demo`, :mod:`.selfheal_demo`, :mod:`.stream_demo`), its
workload and its pure accounting of where every message ended."""
