"""What a running job tells about itself: progress lines in its output, Jupyter's address."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

# "progress: 42%", "progress=0.42" … or a tqdm bar " 42%|████".
_PROGRESS = re.compile(
    r"(?i)\bprogress\s*[:=]\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<pct>%?)|(?P<bar>\d{1,3})%\|"
)


def parse_progress(text: str) -> float | None:
    """The last progress the job printed, as a percentage (0 to 100), or None."""
    last: float | None = None
    for m in _PROGRESS.finditer(text):
        if m.group("bar") is not None:
            value = float(m.group("bar"))
        else:
            value = float(m.group("num"))
            if not m.group("pct") and value <= 1:
                value *= 100  # "progress=0.42" is a ratio
        if 0 <= value <= 100:
            last = value
    return last


def read_tail(path: str | Path, max_bytes: int = 64 * 1024) -> str:
    """The last ``max_bytes`` of a file as text ('' when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


@dataclass(frozen=True, slots=True)
class JupyterConnection:
    job_id: int
    host: str
    port: int
    token: str
    url: str
    app: str = "lab"
    #: the path the server is served under (``/jupyter/JOBID/``), where the portal proxies it
    base_url: str = "/"

    @property
    def authority(self) -> str:
        """``host:port`` for a URL (an IPv6 address in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def connection_path(output_dir: str | Path, job_id: int) -> Path:
    return Path(output_dir) / f"jupyter-{job_id}.json"


def read_connection(path: str | Path) -> JupyterConnection | None:
    """The connection file a Jupyter job writes, or None while there is none (yet)."""
    try:
        return parse_connection(Path(path).read_text(encoding="utf-8"))
    except OSError:
        return None


def parse_connection(text: str) -> JupyterConnection | None:
    """A connection file's text, or None when it is not one (yet)."""
    try:
        data = json.loads(text)
        return JupyterConnection(
            job_id=int(data["job_id"]),
            host=str(data["host"]),
            port=int(data["port"]),
            token=str(data["token"]),
            url=str(data["url"]),
            app=str(data.get("app", "lab")),
            base_url=str(data.get("base_url", "/")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
