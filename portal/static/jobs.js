/* A running job's page: its log tail, progress and state refresh in place every few seconds
   from /api/v1/jobs/<id>/output; a change of state reloads the page (new reason, times).
   Without JavaScript the page reloads itself instead (a <noscript> refresh). */
(function () {
  "use strict";
  var state = document.getElementById("state");
  if (!state || !state.dataset.outputUrl) {
    return;
  }
  var log = document.getElementById("log");
  var box = document.getElementById("progress");
  var bar = document.getElementById("progress-bar");
  var text = document.getElementById("progress-text");
  var percent = new Intl.NumberFormat(document.documentElement.lang || undefined, {
    style: "percent", minimumFractionDigits: 1, maximumFractionDigits: 1
  });
  var following = true; // keep the newest lines in view unless the reader scrolled up
  if (log) {
    log.scrollTop = log.scrollHeight;
    log.addEventListener("scroll", function () {
      following = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    });
  }
  function show(data) {
    if (log && typeof data.tail === "string") {
      log.textContent = data.tail || log.dataset.empty || "";
      if (following) {
        log.scrollTop = log.scrollHeight;
      }
    }
    if (box && bar && text && typeof data.progress === "number") {
      box.hidden = false;
      bar.value = data.progress;
      text.textContent = percent.format(data.progress / 100);
    }
  }
  function tick() {
    fetch(state.dataset.outputUrl, {
      credentials: "same-origin", headers: { Accept: "application/json" }
    }).then(function (response) {
      return response.ok ? response.json() : null;
    }).then(function (data) {
      if (!data) {
        window.setTimeout(tick, 15000);
        return;
      }
      show(data);
      if (data.state !== state.dataset.state) {
        window.location.reload();
        return;
      }
      window.setTimeout(tick, 5000);
    }).catch(function () {
      window.setTimeout(tick, 15000);
    });
  }
  window.setTimeout(tick, 5000);
}());
