"""The ``serverless-retry`` command: simulate a policy (or native retry, or a failure rate against AWS's
quotas), inspect a queue's backlog, inspect, redrive or discard the retry-exhausted queue or a DLQ,
list, cancel or run the retries waiting in the Scheduler, follow or cancel SQS's move tasks, and (with
the ``local`` extra) run the local emulator and the demo. One module per subcommand,
under :mod:`serverless_retry_tools.commands` and :mod:`serverless_retry_tools.local.cli`."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence

from serverless_retry import __version__
from serverless_retry.errors import PolicyError
from serverless_retry.redrive.options import OPTION_KEYS, OptionsError

from serverless_retry_tools.commands import (
    discard,
    inspect_queue,
    move_tasks,
    package,
    redrive,
    retries,
    simulate,
)
from serverless_retry_tools.commands.args import UsageError
from serverless_retry_tools.help_text import plain_parser
from serverless_retry_tools.policy_input import PolicyFileError

EPILOG = """\
Each command's --help shows examples. Tables and progress bars use rich when it is installed
(pip install 'serverless-retry[ops]'), plain text otherwise; colours only on a terminal.

exit status:
  0  ok
  1  partial failure: some messages failed or a run stopped early (nothing is lost), an AWS error,
     an unexpected error (one line; SERVERLESS_RETRY_TRACEBACK=1 shows where), or the output pipe
     closed early (e.g. | head)
  2  usage error: a nonsense argument, an invalid policy, a missing policy file
"""

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE = 0, 1, 2
TRACEBACK_VARIABLE = "SERVERLESS_RETRY_TRACEBACK"  # set to 1: an unexpected error with its traceback


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="serverless-retry",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (simulate, inspect_queue, redrive, discard, retries, move_tasks, package):
        command.register(sub)
    try:
        from serverless_retry_tools.local.cli import register
    except ImportError:  # the local runtime needs the [local] extra (moto)
        pass
    else:
        register(sub)
    return plain_parser(parser)  # docstrings serve as descriptions: no rST markup on a terminal


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-") if option != "event" else option


# A redrive option's problem names other options by their event keys (the operator's Lambda takes
# the same options as JSON); on the command line they are flags.
_OPTION_WORD = re.compile(
    r"(?<![\w-])(" + "|".join(sorted(OPTION_KEYS, key=len, reverse=True)) + r")(?![\w-])"
)


def _flags_in(problem: str) -> str:
    return _OPTION_WORD.sub(lambda m: _flag(m.group(1)), problem)


def _aws_error(exc: BaseException) -> str:
    from serverless_retry.redrive.queue import describe_error

    operation = getattr(exc, "operation_name", "")
    return f"AWS {operation + ': ' if operation else ''}{describe_error(exc)}"


def _run(argv: Sequence[str] | None) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    args = build_parser().parse_args(argv)  # argparse exits 2 with a usage line on a bad argument
    try:
        return int(args.func(args))
    except PolicyError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except OptionsError as exc:
        print(f"error: {_flag(exc.option)}: {_flags_in(exc.problem)}", file=sys.stderr)
    except (UsageError, PolicyFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    except (ClientError, BotoCoreError) as exc:
        print(f"error: {_aws_error(exc)}", file=sys.stderr)
        return EXIT_PARTIAL
    except (BrokenPipeError, KeyboardInterrupt):
        raise  # main's: a closed pipe ends quietly, an interrupt says what is left
    except Exception as exc:  # a bug or a broken environment: one line, not a traceback
        _unexpected(exc, getattr(args, "command", None), archive=getattr(args, "archive", None))
        return EXIT_PARTIAL
    return EXIT_USAGE


def _unexpected(exc: Exception, command: str | None, *, archive: object = None) -> None:
    if os.environ.get(TRACEBACK_VARIABLE) == "1":
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    # redrive sends (discard archives) each message before deleting it: an unfinished one is in place.
    safe = " (anything not moved is still in its queue)" if command in ("redrive", "discard") else ""
    if safe and str(archive or "").startswith("s3://"):  # --archive s3://...: the archive's records
        safe = " (a record is marked redriven only after its send; what was not deleted is still there)"
    print(
        f"error: {command or 'the command'} stopped on an unexpected error{safe}: "
        f"{type(exc).__name__}: {exc} (set {TRACEBACK_VARIABLE}=1 to see where)",
        file=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _run(argv)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PARTIAL
    except KeyboardInterrupt:
        print("interrupted (anything not moved is still where it was)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
