"""`pykorn admission`'s arguments: a certificate given by hand comes with its key, or the controller makes
its own; one without the other is refused at once, with the reason, before anything starts."""

from __future__ import annotations

import pytest

from pykorn_cli.main import build_parser, main


@pytest.mark.parametrize("given", [["--tls-cert", "tls.crt"], ["--tls-key", "tls.key"]])
def test_a_certificate_without_its_key_is_refused(
    given: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["admission", *given]) == 2
    assert "give --tls-cert and --tls-key together, or neither" in capsys.readouterr().err


def test_without_a_certificate_the_controller_makes_its_own_in_the_default_secret() -> None:
    args = build_parser().parse_args(["admission"])
    assert (args.tls_cert, args.tls_key, args.secret_name) == (None, None, "pykorn-admission-certs")
    assert (args.port, args.namespace) == (9089, "yunikorn")
