"""The local AWS emulator: moto in server mode in a child process (:mod:`.emulator` starts it,
:mod:`.emulator_server` is the child), its patches to moto (registry :mod:`.moto_patches`), its SQS
and Scheduler on the logical clock (:mod:`.logical_time`, :mod:`.clock_server`) and CloudWatch in
logical time (:mod:`.cloudwatch`). Imports only the ground floor, never the runtime."""
