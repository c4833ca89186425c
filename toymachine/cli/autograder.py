"""``toym autograder FILE -o autograder.zip``: Gradescope's upload for a problem or an assignment
(``toymachine.check.autograder``): setup.sh, requirements.txt (pinned), run_autograder, the
problems, a toymachine wheel (made from the installed package: no build tools needed)."""

from __future__ import annotations

__all__ = ["autograder_command"]

import os

import typer

from ..errors import ConfigError, Location
from .common import guard


def autograder_command(
    file: str = typer.Argument(..., help="Problem file (YAML) the autograder grades against, or an assignment file "
                                         "listing several."),
    output: str = typer.Option("autograder.zip", "--output", "-o", help="Write the zip to FILE."),
    wheel: str | None = typer.Option(None, "--wheel", help="A toymachine wheel to bundle (default: made from "
                                                              "the installed package's files)."),
) -> None:
    """Build the Gradescope autograder zip: upload it as a "Zip file upload" autograder."""
    from ..check.autograder import autograder_zip, build_wheel

    with guard():
        if wheel:
            if not os.path.isfile(wheel) or not wheel.endswith(".whl"):
                raise ConfigError(f"no wheel at {wheel}", loc=Location(wheel), hint="give the path of a .whl file (pip's wheel command builds one from the source tree)")
            with open(wheel, "rb") as fh:
                bundled = (os.path.basename(wheel), fh.read())
        else:
            bundled = build_wheel()
        data = autograder_zip(file, bundled)
        tmp = output + ".part"
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, output)
        except OSError as exc:
            raise ConfigError(f"cannot write {output}: {exc.strerror}", loc=Location(output)) from None
        import io
        import zipfile

        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
        typer.echo(f"wrote {output} ({len(data):,} bytes): {', '.join(names)}")
