"""Secrets from the environment or a file: never shown, only revealed; errors name the config key
and the variable or file, never the value."""

from pathlib import Path

import pytest

from stream_dedup.errors import ConfigError
from stream_dedup.ops.secret import Secret, read_secret

pytestmark = pytest.mark.unit
PASSWORD = "s3cr3t-Pa55-word"


def test_secret_hides_itself() -> None:
    s = Secret(PASSWORD)
    for shown in (repr(s), str(s), f"{s}", f"{s!r}", repr([s]), repr({"pw": s})):
        assert PASSWORD not in shown
    assert s.reveal() == PASSWORD
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(s)
def test_a_password_files_trailing_newline_is_cut_and_nothing_else(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text(" " + PASSWORD + " \r\n")
    assert read_secret("a", None, "b", str(f), {}).reveal() == " " + PASSWORD + " "


def test_the_environment_is_read_before_the_file(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text("from-file")
    assert read_secret("a", "PW", "b", str(f), {"PW": PASSWORD}).reveal() == PASSWORD


@pytest.mark.parametrize(
    ("env_name", "file_name", "key", "problem"),
    [
        ("PW", None, "kafka.sasl_password_env", "PW is not set or empty"),
        (None, "empty", "kafka.sasl_password_file", "is empty"),
        (None, "latin1", "kafka.sasl_password_file", "cannot read the password file"),
        (None, None, "kafka.sasl_password_env", "no password source"),
    ],
)
def test_a_missing_password_names_the_key(tmp_path: Path, env_name: str | None,
                                          file_name: str | None, key: str, problem: str) -> None:
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "latin1").write_bytes(b"hunter\xe9")
    path = str(tmp_path / file_name) if file_name else None
    with pytest.raises(ConfigError, match=problem) as err:
        read_secret("kafka.sasl_password_env", env_name, "kafka.sasl_password_file", path,
                    {"PW": ""})
    assert err.value.key == key and "hunter" not in str(err.value)


def test_an_empty_secret_is_false() -> None:
    assert Secret(PASSWORD) and not Secret("")
