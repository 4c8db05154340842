"""The roles of a heterogeneous job find each other with the addresses AIPool gave them.

The hub (``ps`` of a PS/Worker job, ``scheduler`` of a Scheduler/Server/Worker job) listens on
its own address; every other replica connects to it, says who it is and waits for an answer.
"""

import json
import os
import socket
import time

role = os.environ["AIPOOL_ROLE"]
index = int(os.environ["AIPOOL_ROLE_INDEX"])
me = f"{role}{index}@{os.environ.get('SLURMD_NODENAME', '?')}"
if os.environ["AIPOOL_TOPOLOGY"] == "ps_worker":
    cluster = json.loads(os.environ["TF_CONFIG"])
    assert cluster["task"] == {"type": role, "index": index}, cluster
    hub, hub_role = cluster["cluster"]["ps"][0], "ps"
    expected = len(cluster["cluster"]["worker"])
else:
    hub = f"{os.environ['DMLC_PS_ROOT_URI']}:{os.environ['DMLC_PS_ROOT_PORT']}"
    hub_role = "scheduler"
    expected = int(os.environ["DMLC_NUM_SERVER"]) + int(os.environ["DMLC_NUM_WORKER"])
host, port = hub.rsplit(":", 1)

if role == hub_role and index == 0:
    seen = []
    with socket.create_server((host, int(port))) as server:
        server.settimeout(120)
        while len(seen) < expected:
            conn, _ = server.accept()
            with conn:
                seen.append(conn.recv(256).decode())
                conn.sendall(f"ack from {me}".encode())
    print(f"HUB {me} at {hub} saw {' '.join(sorted(seen))}", flush=True)
elif role != hub_role:
    deadline = time.monotonic() + 120
    while True:
        try:
            sock = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    with sock:
        sock.sendall(me.encode())
        print(f"PEER {me} got '{sock.recv(256).decode()}' from {hub}", flush=True)
