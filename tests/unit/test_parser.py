"""The command line's parser: every command's help says what it does and shows an example, and
bad usage is one error line (exit 2) without a traceback."""

import re

import pytest

from stream_dedup import __version__
from stream_dedup.cli.main import main
from stream_dedup.cli.parser import build_parser

pytestmark = pytest.mark.unit


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


COMMANDS = [["dedup"], ["bulk-load"], ["check"], ["eval"], ["fit"], ["audit"], ["inspect"], ["run"],
            ["produce"],
            ["topics"], ["topics", "create"], ["stage"], ["demo"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_every_command_help_says_what_and_shows_an_example(argv: list[str], capsys) -> None:
    text = _help(argv, capsys)
    example = text.split("example:\n", 1)
    assert len(example) == 2, text
    assert example[1].lstrip().startswith(f"stream-dedup {argv[0]}")
    description = text.split("\n\n")[1]
    assert not description.startswith(("positional", "options")) and len(description) > 30


def test_every_subcommand_is_in_the_help_test() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sorted(sub.choices) == sorted({c[0] for c in COMMANDS})


def test_run_help_names_the_settings_and_environment_overrides(capsys) -> None:
    text = _help(["run"], capsys)
    for needle in ("STREAM_DEDUP__KAFKA__BOOTSTRAP_SERVERS=", "kafka.bootstrap_servers",
                   "kafka.input_topics", "state.path", "--config"):
        assert needle in text


def test_check_help_describes_both_texts(capsys) -> None:
    text = _help(["check"], capsys)
    assert re.search(r"first +the earlier text", text) and re.search(r"second +the later text", text)


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The error line of a bad command line (after argparse's usage lines)."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and err.rstrip("\n").endswith(errors[0]), err
    return errors[0]


# Each command with the arguments it requires, so that the unknown option is the one error.
REQUIRED = {"check": ["a", "b"], "eval": ["in.jsonl"], "fit": ["in.jsonl", "-o", "s.json"],
            "audit": ["in.jsonl"], "produce": ["in.jsonl"], "topics": ["create"],
            "stage": ["index"], "bulk-load": ["in.jsonl", "--state", "dir"]}


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_an_unknown_option_of_every_command_is_one_error_line(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    required = REQUIRED.get(argv[0], []) if len(argv) == 1 else []
    line = _usage_error([*argv, *required, "--no-such-option"], capsys)
    assert line.startswith("stream-dedup") and "--no-such-option" in line


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["nope"], "invalid choice: 'nope'"),
        (["produce", "in.jsonl", "--rate", "fast"], "argument --rate: invalid float value"),
        (["stage", "join"], "argument stage: invalid choice: 'join'"),
        (["topics"], "the following arguments are required: create"),
        (["eval", "--strategies", "simhash,nope"], "unknown strategy nope"),
        (["eval", "in.jsonl", "--runs", "0"], "argument --runs: expected a whole number of at "
                                              "least 1, got '0'"),
        (["eval", "in.jsonl", "--runs", "three"], "got 'three'"),
        (["--log-format", "xml", "check", "a", "b"], "argument --log-format: invalid choice"),
    ],
)
def test_bad_usage_names_the_argument(argv: list[str], says: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert says in _usage_error(argv, capsys)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"stream-dedup {__version__}\n"


def test_parsed_defaults() -> None:
    args = build_parser().parse_args(["demo"])
    assert (args.command, args.port, args.log_format, args.json) == ("demo", 29092, "human", False)
    args = build_parser().parse_args(["topics", "create", "--partitions", "6"])
    assert (args.topics_command, args.partitions, args.bootstrap) == ("create", 6, None)
