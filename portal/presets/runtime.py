"""What the preset jobs run: ``train``, ``evaluate``, ``serve``, and ``selftest`` (the test
tool: fine-tune and evaluate in one process and print the metrics).

    python -m portal.presets.runtime selftest --preset digits-classifier --out /tmp/x

Runs on the compute node as the job's user; reads only the model directory, the offline
mirror and data shipped with the installed packages.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
from pathlib import Path
from typing import Any

from portal.presets.catalog import RESULTS, get
from portal.presets.kinds import Kind
from portal.presets.programs import KINDS
from translations import N_


def _kind(args: argparse.Namespace) -> Kind:
    preset = get(args.preset)
    if preset is None or preset.runtime is None:
        raise SystemExit(
            f"preset {args.preset!r} has no runtime in this installation "
            f"(runnable: {', '.join(sorted(KINDS))})"
        )
    mirror = Path(args.mirror) if args.mirror else None
    return KINDS[preset.runtime](mirror)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def _data(variable: str) -> Path | None:
    """A dataset version mounted by the job spec (``mounts``: AIPOOL_DATA_<NAME>)."""
    value = os.environ.get(variable)
    return Path(value) if value else None


def train(kind: Kind, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
    model = out / "model"
    model.mkdir(parents=True, exist_ok=True)
    cfg = kind.train(base, model, data)
    _write_json(out / "result.json", {"config": cfg})
    return cfg


def evaluate(kind: Kind, model: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    x, y = kind.from_directory(data) if data is not None else kind.test_set()
    report = kind.evaluate(kind.load(model), x, y, out)
    _write_json(out / "metrics.json", report)
    return report


def serve(kind: Kind, model: Path, conn: Path, host: str | None) -> None:
    from flask import Flask, abort, jsonify, request

    from portal.errors import error_response  # the portal forwards these answers as they are

    key = os.environ.get("SERVE_KEY", "")
    if len(key) < 16:
        raise SystemExit("SERVE_KEY (the replica's key, from the portal) is not set")
    loaded = kind.load(model)
    app = Flask("aipool-serve")

    @app.before_request
    def _only_the_portal() -> None:
        if request.path != "/health" and request.headers.get("X-Replica-Key") != key:
            abort(403)

    @app.get("/health")
    def health() -> Any:
        return jsonify({"status": "ok", "preset": kind.name})

    @app.post("/predict")
    def predict() -> Any:
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return error_response(422, "validation_failed", N_("A JSON object is expected."))
        try:
            inputs = kind.parse(body)
        except ValueError as exc:
            return error_response(422, "validation_failed", str(exc))
        return jsonify(kind.respond(kind.predict(loaded, inputs)))

    server = _listen(app, os.environ.get("SERVE_PORTS", ""))
    port = int(server.effective_port)
    address = host or socket.gethostbyname(socket.gethostname())
    _write_json(
        conn,
        {"host": address, "port": port, "job_id": int(os.environ.get("SLURM_JOB_ID", "0"))},
    )
    print(f"serving {kind.name} on {address}:{port}", flush=True)
    server.run()


def _listen(app: Any, ports: str) -> Any:
    """A server on a free port of ``ports`` ("LOW-HIGH", the only ports the portal proxies
    to); any free port when none is given (a replica started by hand)."""
    import waitress

    if not ports:
        return waitress.create_server(app, host="0.0.0.0", port=0, threads=4)  # noqa: S104
    low, _, high = ports.partition("-")
    span = range(int(low), int(high) + 1)
    for port in random.sample(span, min(256, len(span))):
        try:
            return waitress.create_server(app, host="0.0.0.0", port=port, threads=4)  # noqa: S104
        except OSError:
            continue
    raise SystemExit(f"no free port in {ports} to serve on")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m portal.presets.runtime")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("train", "evaluate", "serve", "selftest"):
        p = sub.add_parser(name)
        p.add_argument("--preset", required=True)
        p.add_argument("--mirror", default=os.environ.get("MODEL_MIRROR"))
        if name == "train":
            p.add_argument("--base", type=Path, required=True)
        if name in ("evaluate", "serve"):
            p.add_argument("--model", type=Path, required=True)
        if name == "serve":
            p.add_argument("--conn", type=Path, required=True)
            p.add_argument("--host")
        else:
            p.add_argument("--out", type=Path, required=True)
        if name == "selftest":
            p.add_argument(
                "--publish", action="store_true", help="write the preset's published results"
            )
    args = parser.parse_args(argv)
    kind = _kind(args)
    if args.command == "train":
        train(kind, args.base, args.out, _data("AIPOOL_DATA_TRAIN"))
    elif args.command == "evaluate":
        report = evaluate(kind, args.model, args.out, _data("AIPOOL_DATA_EVAL"))
        print(json.dumps(report["metrics"]))
    elif args.command == "serve":
        serve(kind, args.model, args.conn, args.host)
    else:
        train(kind, args.out / "base", args.out)
        report = evaluate(kind, args.out / "model", args.out / "evaluation")
        print(json.dumps({"preset": args.preset, **report["metrics"]}))
        if args.publish:
            RESULTS.mkdir(exist_ok=True)
            tool = f"python -m portal.presets.runtime selftest --preset {args.preset}"
            published = {"preset": args.preset, "tool": tool, **report}
            _write_json(RESULTS / f"{args.preset}.json", published)
    return 0


if __name__ == "__main__":
    sys.exit(main())
