"""Helpers of the command-line tests: invoke ``zsceval`` in-process and check a user error."""

from click.testing import CliRunner

from zsceval.cli import main


def invoke(*args):
    """``zsceval ARGS`` through click's test runner (arguments converted with ``str``)."""
    return CliRunner().invoke(main, [str(a) for a in args])


def clean_error(res, *needles):
    """A user error: non-zero exit through click (no traceback) whose message holds ``needles``."""
    assert res.exit_code != 0, res.output
    assert isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    for n in needles:
        assert n in res.output, res.output
