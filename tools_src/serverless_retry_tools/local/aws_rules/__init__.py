"""AWS's documented behaviour as pure functions (ground floor): Lambda's asynchronous invocation,
recursion detection, SQS poller events and scaling, Scheduler's one-time schedules, EventBridge's
patterns and input transforms. The emulator's patches and the runtime apply the same rules; neither
imports the other to reach them."""
