"""The embedded local runtime: the project on a laptop, with no AWS account (docs/local-emulator.md).

By role, each floor importing only the floors below it (docs/architecture.md, "The local runtime";
checked by tests/unit/test_tools_floors.py):

- ground: :mod:`.emulator_contract` (the account, credentials and clock routes both sides use),
  :mod:`.clock` (the logical clock) and :mod:`.aws_rules` (AWS's documented behaviour, pure);
- :mod:`.emulator`: moto in server mode in a child process on 127.0.0.1
  (``with Emulator(clock_scale=k) as emu: emu.url, emu.clock, emu.env(), emu.client_kwargs()``) with
  its patches to moto, its SQS and schedules on the logical clock, and CloudWatch in logical time;
- :mod:`.runtime`: what moto stores but does not run (SQS, stream and Pipes mappings, Scheduler
  schedules, asynchronous invocations), read from the emulator's state through the AWS API, and the
  deployed functions in worker processes on their Lambda runtime's Python; never imports the
  emulator (nor the emulator the runtime);
- :mod:`.sandbox`: a Terraform root applied to the emulator, the ready file of a running sandbox;
- :mod:`.demos`: the ``serverless-retry demo`` stories, their frame, workloads and accounting;
- :mod:`.cli`: the ``demo`` and ``local`` subcommands.

Nothing here is imported by the Lambda handlers; it needs the ``local`` extra (moto[server]).
"""
