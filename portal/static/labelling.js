// The annotation canvas of the labelling page: boxes, polygons, points and image classes,
// drawn over the image, kept in image pixels and saved through the portal's JSON API.
// Every text it shows comes from the page (#labelling-i18n), in the reader's language.
(function () {
  "use strict";
  const root = document.getElementById("labeller");
  if (!root) return;
  const canvas = document.getElementById("canvas");
  const ctx = canvas.getContext("2d");
  const list = document.getElementById("shapes");
  const message = document.getElementById("message");
  const labels = JSON.parse(root.dataset.labels);
  const T = JSON.parse(document.getElementById("labelling-i18n").textContent);
  const readonly = root.dataset.readonly === "1";
  const COLORS = ["#e53935", "#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00acc1", "#6d4c41", "#d81b60", "#7cb342"];
  const MAX_W = 900, MAX_H = 640;

  let shapes = [];     // [{kind, label, points: [[x, y], …]}] in image pixels
  let tool = "bbox";
  let label = labels[0];
  let pending = null;  // the shape being drawn
  let hover = null;    // the pointer, in image pixels
  let dragFrom = null;
  let scale = 1;
  const image = new Image();

  // "%(num)d" and "%(name)s" placeholders, as the portal's catalogue writes them
  function fill(text, params) {
    return text.replace(/%\((\w+)\)[sd]/g, function (all, name) {
      return params[name] === undefined ? all : String(params[name]);
    });
  }

  function word(table, value) { return table[value] === undefined ? value : table[value]; }

  function showStatus(value) { document.getElementById("status").textContent = word(T.statuses, value); }

  // a refusal's message (already in the reader's language) and its fields' messages
  function problem(data, fallback) {
    const fields = data.errors ? (data.errors.json || data.errors) : {};
    const details = [];
    (function walk(value) {
      if (typeof value === "string") details.push(value);
      else if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === "object") Object.keys(value).forEach(function (k) { walk(value[k]); });
    }(fields));
    return [data.message || fallback].concat(details).join(" ");
  }

  function say(text, isError) {
    message.textContent = text;
    message.className = isError ? "error" : "";
  }

  function api(method, url, body) {
    return fetch(url, {
      method: method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": root.dataset.csrf },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).catch(function () {
      throw new Error(T.failed);  // the browser's own words for a lost connection are English
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) throw new Error(problem(data, T.failed));
        return data;
      });
    });
  }

  function color(name) { return COLORS[Math.max(0, labels.indexOf(name)) % COLORS.length]; }

  function toImage(event) {
    const box = canvas.getBoundingClientRect();
    const x = (event.clientX - box.left) * (canvas.width / box.width) / scale;
    const y = (event.clientY - box.top) * (canvas.height / box.height) / scale;
    const clamp = function (v, hi) { return Math.round(Math.min(Math.max(v, 0), hi) * 100) / 100; };
    return [clamp(x, image.naturalWidth), clamp(y, image.naturalHeight)];
  }

  function path(points, close) {
    ctx.beginPath();
    points.forEach(function (p, i) {
      const x = p[0] * scale, y = p[1] * scale;
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    if (close) ctx.closePath();
  }

  // A shape is drawn twice: a white halo under its colour, so a red box stays visible on a
  // red object and a light one on a light background; its label rides on a tag beside it.
  function outline(s, live) {
    if (s.kind === "bbox") {
      const a = s.points[0], b = s.points[1] || hover || a;
      ctx.strokeRect(a[0] * scale, a[1] * scale, (b[0] - a[0]) * scale, (b[1] - a[1]) * scale);
    } else if (s.kind === "polygon") {
      path(live && hover ? s.points.concat([hover]) : s.points, !live);
      ctx.stroke();
    } else if (s.kind === "point") {
      ctx.beginPath();
      ctx.arc(s.points[0][0] * scale, s.points[0][1] * scale, 5, 0, 2 * Math.PI);
      ctx.stroke();
    }
  }

  function tag(text, x, y, fill) {
    ctx.setLineDash([]);
    ctx.font = "13px sans-serif";
    const w = ctx.measureText(text).width + 8;  // CJK and Latin alike
    const top = Math.max(0, Math.min(y - 18, canvas.height - 18));
    const left = Math.max(0, Math.min(x, canvas.width - w));
    ctx.fillStyle = "#fff";
    ctx.fillRect(left - 1, top - 1, w + 2, 20);
    ctx.fillStyle = fill;
    ctx.fillRect(left, top, w, 18);
    ctx.fillStyle = "#fff";
    ctx.fillText(text, left + 4, top + 13);
  }

  function drawShape(s, live) {
    const c = color(s.label);
    ctx.setLineDash(live ? [5, 4] : []);
    ctx.strokeStyle = "#fff";
    ctx.globalAlpha = 0.9;
    ctx.lineWidth = 5;
    outline(s, live);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = ctx.fillStyle = c;
    ctx.lineWidth = 2;
    outline(s, live);
    if (s.kind === "polygon") {
      const pts = live && hover ? s.points.concat([hover]) : s.points;
      if (!live) { path(pts, true); ctx.globalAlpha = 0.2; ctx.fill(); ctx.globalAlpha = 1; }
      pts.forEach(function (p) { ctx.fillRect(p[0] * scale - 2, p[1] * scale - 2, 4, 4); });
    } else if (s.kind === "point") {
      ctx.beginPath();
      ctx.arc(s.points[0][0] * scale, s.points[0][1] * scale, 4, 0, 2 * Math.PI);
      ctx.fill();
    }
    if (!live && s.points.length) {
      const xs = s.points.map(function (p) { return p[0] * scale; });
      const ys = s.points.map(function (p) { return p[1] * scale; });
      tag(s.label, Math.min.apply(null, xs), Math.min.apply(null, ys), c);
    }
  }

  function draw() {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(image, 0, 0, canvas.width, canvas.height);
    shapes.forEach(function (s) { drawShape(s, false); });
    if (pending) drawShape(pending, true);
    const classes = shapes.filter(function (s) { return s.kind === "class"; });
    classes.forEach(function (s, i) { tag(s.label, 4, 22 + i * 22, color(s.label)); });
    renderList();
  }

  function renderList() {
    list.replaceChildren();
    shapes.forEach(function (s, i) {
      const li = document.createElement("li");
      li.dataset.kind = s.kind;
      const pts = s.points.map(function (p) { return "(" + p[0] + "," + p[1] + ")"; }).join(" ");
      li.textContent = word(T.shapes, s.kind) + " " + s.label + " " + pts + " ";
      if (!readonly) {
        const del = document.createElement("button");
        del.type = "button";
        del.textContent = "×";
        del.title = T.delete;
        del.setAttribute("aria-label", T.delete);
        del.addEventListener("click", function () { shapes.splice(i, 1); draw(); });
        li.appendChild(del);
      }
      list.appendChild(li);
    });
  }

  function setTool(name) {
    tool = name;
    pending = null;
    root.querySelectorAll("[data-tool]").forEach(function (b) {
      b.classList.toggle("active", b.dataset.tool === name);
    });
    if (name === "class") addClass();
    draw();
  }

  function setLabel(name) {
    label = name;
    if (pending) pending.label = name;
    root.querySelectorAll("[data-label]").forEach(function (b) {
      b.classList.toggle("active", b.dataset.label === name);
    });
    draw();
  }

  function addClass() {
    if (readonly) return;
    const exists = shapes.some(function (s) { return s.kind === "class" && s.label === label; });
    if (!exists) shapes.push({ kind: "class", label: label, points: [] });
    tool = "bbox";
    root.querySelectorAll("[data-tool]").forEach(function (b) {
      b.classList.toggle("active", b.dataset.tool === "bbox");
    });
  }

  function finish() {
    if (pending && pending.kind === "polygon" && pending.points.length >= 3) shapes.push(pending);
    pending = null;
    draw();
  }

  function near(a, b) {
    return Math.hypot((a[0] - b[0]) * scale, (a[1] - b[1]) * scale) < 8;
  }

  canvas.addEventListener("mousedown", function (e) {
    if (readonly || e.button !== 0) return;
    const p = toImage(e);
    if (tool === "bbox") {
      if (pending) {  // second click of a click-click box
        pending.points = [pending.points[0], p];
        if (pending.points[0][0] !== p[0] && pending.points[0][1] !== p[1]) shapes.push(pending);
        pending = null;
      } else {
        pending = { kind: "bbox", label: label, points: [p] };
        dragFrom = p;
      }
    } else if (tool === "polygon") {
      if (!pending) pending = { kind: "polygon", label: label, points: [] };
      if (pending.points.length >= 3 && near(pending.points[0], p)) { finish(); return; }
      pending.points.push(p);
    } else if (tool === "point") {
      shapes.push({ kind: "point", label: label, points: [p] });
    }
    draw();
  });

  canvas.addEventListener("mousemove", function (e) {
    hover = toImage(e);
    if (pending) draw();
  });

  canvas.addEventListener("mouseup", function (e) {
    if (readonly || !pending || pending.kind !== "bbox" || !dragFrom) return;
    const p = toImage(e);
    if (near(dragFrom, p)) { dragFrom = null; return; }  // a click: wait for the second one
    pending.points = [dragFrom, p];
    if (dragFrom[0] !== p[0] && dragFrom[1] !== p[1]) shapes.push(pending);
    pending = null;
    dragFrom = null;
    draw();
  });

  canvas.addEventListener("dblclick", finish);

  function save() {
    if (readonly) return Promise.resolve(null);
    finish();
    const body = { annotations: shapes.map(function (s) {
      return { kind: s.kind, label: s.label, points: s.points };
    }) };
    return api("PUT", root.dataset.api, body).then(function (item) {
      showStatus(item.status);
      say(fill(shapes.length === 1 ? T.saved_one : T.saved_many, { num: shapes.length }), false);
      return item;
    });
  }

  function saveAndNext() {
    // an annotator takes the next item (POST holds it for them); a reader only looks
    save().then(function () { return api(readonly ? "GET" : "POST", root.dataset.next); })
      .then(function (item) {
        window.location.href = root.dataset.page.replace(/\/0$/, "/" + item.id);
      })
      .catch(function (err) { say(err.message, true); });
  }

  function review(decision) {
    if (!root.dataset.review) return;
    const note = decision === "reject" ? (window.prompt(T.reject_why) || "") : "";
    api("POST", root.dataset.review, { decision: decision, note: note })
      .then(function (item) {
        showStatus(item.status);
        say(word(T.reviewed, item.status), false);
      })
      .catch(function (err) { say(err.message, true); });
  }

  root.querySelectorAll("[data-tool]").forEach(function (b) {
    b.addEventListener("click", function () { setTool(b.dataset.tool); });
  });
  root.querySelectorAll("[data-label]").forEach(function (b) {
    b.addEventListener("click", function () { setLabel(b.dataset.label); });
  });
  document.getElementById("save").addEventListener("click", function () {
    save().catch(function (err) { say(err.message, true); });
  });
  document.getElementById("next").addEventListener("click", saveAndNext);
  const accept = document.getElementById("accept"), reject = document.getElementById("reject");
  if (accept) accept.addEventListener("click", function () { review("accept"); });
  if (reject) reject.addEventListener("click", function () { review("reject"); });

  document.addEventListener("keydown", function (e) {
    if (e.target instanceof HTMLInputElement || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    if (k >= "1" && k <= "9" && labels[Number(k) - 1] !== undefined) setLabel(labels[Number(k) - 1]);
    else if (k === "b") setTool("bbox");
    else if (k === "p") setTool("polygon");
    else if (k === "k") setTool("point");
    else if (k === "c") { setTool("class"); }
    else if (k === "Enter") finish();
    else if (k === "Escape") { pending = null; draw(); }
    else if (k === "z") { shapes.pop(); draw(); }
    else if (k === "s") save().catch(function (err) { say(err.message, true); });
    else if (k === "n") saveAndNext();
    else if (k === "a") review("accept");
    else if (k === "r") review("reject");
    else return;
    e.preventDefault();
  });

  image.addEventListener("load", function () {
    scale = Math.min(MAX_W / image.naturalWidth, MAX_H / image.naturalHeight, 16);
    canvas.width = Math.round(image.naturalWidth * scale);
    canvas.height = Math.round(image.naturalHeight * scale);
    api("GET", root.dataset.api).then(function (item) {
      shapes = item.annotations.map(function (a) {
        return { kind: a.kind, label: a.label, points: a.points };
      });
      setTool("bbox");
      setLabel(label);
      root.dataset.ready = "1";
    }).catch(function (err) { say(err.message, true); });
  });
  api("GET", root.dataset.api).then(function (item) { image.src = item.image_url; })
    .catch(function (err) { say(err.message, true); });
}());
