"""``python -m gres probe|render``: the same commands as ``aipool gres``."""

from gres.cli import cli

if __name__ == "__main__":
    cli(prog_name="python -m gres")
