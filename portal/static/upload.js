// Upload forms (form[data-upload]) with the browser's own progress: the files are sent with
// XMLHttpRequest so a <progress> can show how much has gone, and the portal's answer (the next
// page, or the form again with its errors) replaces this page. Files over the size the portal
// accepts are refused before anything is sent. Without this script the forms still work.
// Every text it shows comes from the page (#upload-i18n), in the reader's language.
(function () {
  "use strict";
  const source = document.getElementById("upload-i18n");
  if (!source || !window.XMLHttpRequest || !window.FormData) return;
  const T = JSON.parse(source.textContent);
  const percent = new Intl.NumberFormat(document.documentElement.lang || undefined, { style: "percent" });

  function fill(text, params) {
    return text.replace(/%\((\w+)\)[sd]/g, function (all, name) {
      return params[name] === undefined ? all : String(params[name]);
    });
  }

  function tooBig(form) {
    const inputs = form.querySelectorAll("input[type=file]");
    for (let i = 0; i < inputs.length; i++) {
      const files = inputs[i].files || [];
      for (let j = 0; j < files.length; j++) {
        if (files[j].size > T.limit) return files[j].name;
      }
    }
    return null;
  }

  function show(page, url) {
    document.open();
    document.write(page);
    document.close();
    if (url) window.history.replaceState(null, "", url);
  }

  document.querySelectorAll("form[data-upload]").forEach(function (form) {
    const bar = form.querySelector("progress");
    const status = form.querySelector(".upload-status");
    const button = form.querySelector("button[type=submit]");

    function say(text, isError) {
      status.textContent = text;
      status.classList.toggle("error", Boolean(isError));
    }

    form.addEventListener("submit", function (event) {
      const big = tooBig(form);
      if (big) {
        event.preventDefault();
        say(fill(T.too_big, { name: big, limit: T.limit_text }), true);
        return;
      }
      event.preventDefault();
      const xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.upload.addEventListener("progress", function (e) {
        if (!e.lengthComputable) return;
        bar.max = e.total;
        bar.value = e.loaded;
        say(fill(T.sending, { percent: percent.format(e.loaded / e.total) }), false);
      });
      xhr.upload.addEventListener("load", function () { say(T.checking, false); });
      xhr.addEventListener("load", function () { show(xhr.responseText, xhr.responseURL); });
      xhr.addEventListener("error", function () {
        button.disabled = false;
        bar.hidden = true;
        say(T.failed, true);
      });
      bar.hidden = false;
      bar.value = 0;
      button.disabled = true;
      xhr.send(new FormData(form));
    });
  });
}());
