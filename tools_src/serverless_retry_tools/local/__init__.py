"""The embedded local runtime: the project on a laptop, with no AWS account (docs/local-emulator.md).

- :mod:`~serverless_retry_tools.local.emulator`: moto in server mode in a child process on 127.0.0.1
  (``with Emulator(clock_scale=k) as emu: emu.url, emu.clock, emu.env(), emu.client_kwargs()``), with
  the compatibility patches of :mod:`~serverless_retry_tools.local.moto_patches`, the AWS constraints
  moto skips (:mod:`~serverless_retry_tools.local.moto_fidelity`), SQS message move tasks run in the
  background at their rate (:mod:`~serverless_retry_tools.local.move_tasks`) and its SQS on the logical
  clock (:mod:`~serverless_retry_tools.local.logical_time`);
- :mod:`~serverless_retry_tools.local.runtime`: what moto stores but does not run (SQS event source
  mappings, Scheduler one-time schedules), read from the emulator's state, with a clock scale;
- :mod:`~serverless_retry_tools.local.functions` / ``worker.py``: deployed functions run in worker
  processes, on their Lambda runtime's Python (:mod:`~serverless_retry_tools.local.lambda_python`); :mod:`~serverless_retry_tools.local.logs`: their output into the emulator's CloudWatch Logs;
- :mod:`~serverless_retry_tools.local.terraform`: init/apply/plan/destroy a root against the emulator;
- :mod:`~serverless_retry_tools.local.demo` and :mod:`~serverless_retry_tools.local.cli`: ``serverless-retry demo``
  and ``serverless-retry local --root DIR``; the frame the three demos share (options, progress
  lines, apply/run/destroy) in :mod:`~serverless_retry_tools.local.demo_frame`, what they send and
  read back in :mod:`~serverless_retry_tools.local.demo_queues`.

Nothing here is imported by the Lambda handlers; it needs the ``local`` extra (moto[server]).
"""
