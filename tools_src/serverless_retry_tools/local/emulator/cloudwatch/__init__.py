"""CloudWatch on the emulator, in logical time: the metrics SQS, Lambda and our functions' EMF lines
publish, and moto's metric alarms evaluated per CloudWatch's rules.

- :mod:`.math_expr`, :mod:`.alarms`, :mod:`.emf`, :mod:`.queue_gauges`: pure (no moto, no clock).
- :mod:`.agent`: in the emulator's process, each logical minute: the SQS metrics of the minute,
  then every alarm evaluated and its state set (installed by ``emulator_server``).
- :mod:`.lambda_metrics`: in the runtime's process, Invocations / Errors / Throttles / Duration
  of each invocation, put to the emulator's CloudWatch with logical timestamps.
"""
