"""(b) A student starts Jupyter from the form, clicks Connect, and JupyterLab loads through
the portal (no route to the node needed) and runs code in a kernel over its WebSocket;
another user following the same link, or opening the same socket, is refused."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.journeys.conftest import Site, job_id_of, wait_for


def test_jupyterlab_through_the_portal_for_its_owner_only(
    site: Site, as_user: Callable[[str], Page]
) -> None:
    page = as_user("dave")
    page.goto(f"{site.url}/jobs/new")
    page.select_option("select[name=kind]", "jupyter")
    page.select_option("select[name=project_id]", label="cs101")
    page.fill("input[name=name]", "journey-notebook")
    page.fill("input[name=partition]", "cpu")
    page.fill("input[name=cpus]", "1")
    page.fill("input[name=time_limit]", "15")
    page.fill("textarea[name=script]", "")
    page.click("form.card button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    job_id = job_id_of(page)
    try:

        def connect_link() -> bool:
            page.reload()
            return page.locator("#jupyter a[href$='/lab']").count() == 1

        wait_for(connect_link, 120, f"job {job_id}'s Connect link")
        link = page.locator("#jupyter a").get_attribute("href")
        assert link == f"/jupyter/{job_id}/lab"
        with page.context.expect_page() as opened:
            page.click("#jupyter a")
        lab = opened.value
        lab.wait_for_load_state()
        wait_for(lambda: "JupyterLab" in lab.title(), 60, "JupyterLab's page")
        assert lab.url.startswith(f"{site.url}/jupyter/{job_id}/")  # through the portal
        status = lab.request.get(f"{site.url}/jupyter/{job_id}/api/status")
        assert status.ok, status.text()
        # a kernel, started and run from the browser: its channels are a WebSocket
        printed = lab.evaluate(RUN_IN_KERNEL, [f"{site.url}/jupyter/{job_id}/", "print(6 * 7)"])
        assert printed == "42", printed
        # others with the same link are refused by the portal; nothing reaches the server:
        # the course's manager sees the job but not into it, a stranger not even the job
        for who, status in (("carol", 403), ("alice", 404)):
            refused = as_user(who).goto(f"{site.url}/jupyter/{job_id}/lab")
            assert refused is not None
            assert refused.status == status, who
            assert "JupyterLab" not in refused.text()
        carol = as_user("carol")
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in carol.context.cookies())
        socket = f"{site.url.replace('http', 'ws', 1)}/jupyter/{job_id}/api/kernels/x/channels"
        with pytest.raises(InvalidStatus) as closed:
            connect(socket, additional_headers={"Cookie": cookie, "Origin": site.url})
        assert closed.value.response.status_code == 403
        job = site.client.job(job_id)
        assert job is not None
        assert job.user == "dave"
    finally:
        site.api("dave").delete(f"/jobs/{job_id}")


# In the JupyterLab page: start a kernel over the REST API (with Jupyter's XSRF header), open
# its channels WebSocket, send one execute_request (Jupyter's JSON wire form), and answer what
# the code printed on iopub, or what went wrong.
RUN_IN_KERNEL = """
async ([base, code]) => {
  const xsrf = (document.cookie.split('; ').find(c => c.startsWith('_xsrf=')) || '').slice(6);
  const r = await fetch(base + 'api/kernels', {method: 'POST', body: '{}',
    headers: {'X-XSRFToken': xsrf, 'Content-Type': 'application/json'}});
  if (!r.ok) return 'starting a kernel: ' + r.status;
  const kernel = await r.json();
  const url = base.replace(/^http/, 'ws') + 'api/kernels/' + kernel.id + '/channels?session_id=j';
  return await new Promise(resolve => {
    const ws = new WebSocket(url);
    const timer = setTimeout(() => { ws.close(); resolve('no output in 90 s'); }, 90000);
    ws.onerror = () => { clearTimeout(timer); resolve('the socket failed'); };
    ws.onopen = () => ws.send(JSON.stringify({
      header: {msg_id: 'j1', msg_type: 'execute_request', session: 'j', username: '',
               version: '5.3', date: new Date().toISOString()},
      parent_header: {}, metadata: {}, channel: 'shell', buffers: [],
      content: {code: code, silent: false, store_history: false, user_expressions: {},
                allow_stdin: false, stop_on_error: true}}));
    ws.onmessage = event => {
      const msg = JSON.parse(event.data);
      if (msg.msg_type === 'stream' || msg.msg_type === 'error') {
        clearTimeout(timer);
        ws.close();
        resolve(msg.msg_type === 'stream' ? msg.content.text.trim() : msg.content.evalue);
      }
    };
  });
}
"""
