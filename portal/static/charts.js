/* Charts over time with the vendored uPlot: the data come from /api/v1/monitoring/series (the
   control daemon's capacity samples), the words from the page (#chart-text, in the reader's
   language). Each <div class="chart" data-chart="…"> draws one chart; the page's tables say
   the same in numbers, for readers without JavaScript or a screen. */
(function () {
  "use strict";
  var root = document.getElementById("charts");
  var textNode = document.getElementById("chart-text");
  if (!root || !textNode || typeof uPlot === "undefined") {
    return;
  }
  var text = JSON.parse(textNode.textContent);
  var lang = document.documentElement.lang || undefined;
  var COLOURS = ["#3b6fd8", "#1e7b34", "#b3261e", "#8a6100", "#6b4fa0", "#0f7c8c", "#c2185b",
    "#5d4037"];
  var when = new Intl.DateTimeFormat(lang, { month: "numeric", day: "numeric",
    hour: "2-digit", minute: "2-digit" });
  var clock = new Intl.DateTimeFormat(lang, { hour: "2-digit", minute: "2-digit" });
  var day = new Intl.DateTimeFormat(lang, { month: "numeric", day: "numeric" });
  var number = new Intl.NumberFormat(lang, { maximumFractionDigits: 2 });

  function timeAxis(span) {
    // a day or less: the time of day; longer: the date
    var fmt = span <= 86400 ? clock : day;
    return {
      space: 70,
      values: function (u, splits) {
        return splits.map(function (v) { return fmt.format(new Date(v * 1000)); });
      }
    };
  }

  function valueAxis(unit) {
    return {
      values: function (u, splits) {
        return splits.map(function (v) { return number.format(v) + (unit || ""); });
      },
      size: 64
    };
  }

  function draw(el, series, unit, span) {
    // series: the time axis and [{label, values}]; percentages from 0 to 100, counts from 0
    var data = [series.t];
    var percent = unit === " %";
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 220,
      series: [{ label: root.dataset.timeLabel, value: function (u, v) { return v == null ? "—" : when.format(new Date(v * 1000)); } }],
      axes: [timeAxis(span), valueAxis(unit)],
      scales: {
        x: { time: true },
        y: { range: function (u, min, max) {
          return percent ? [0, 100] : [0, max > 0 ? max * 1.1 : 1];
        } }
      },
      legend: { live: true }
    };
    series.lines.forEach(function (line, i) {
      data.push(line.values);
      opts.series.push({
        label: line.label,
        stroke: COLOURS[i % COLOURS.length],
        width: 1.5,
        points: { show: false },
        value: function (u, v) { return v == null ? "—" : number.format(v) + (unit || ""); }
      });
    });
    if (!series.lines.length) {
      el.textContent = text.empty;
      return;
    }
    el.textContent = "";
    var plot = new uPlot(opts, data, el);
    window.addEventListener("resize", function () {
      plot.setSize({ width: Math.max(280, el.clientWidth || 600), height: 220 });
    });
  }

  function kindLabel(kind) {
    return text.kinds[kind] || kind;
  }

  function charts(data) {
    root.querySelectorAll(".chart[data-chart]").forEach(function (el) {
      var what = el.dataset.chart;
      var lines = [];
      var unit = "";
      if (what === "utilisation") {
        unit = " %";
        Object.keys(data.utilisation).forEach(function (kind) {
          lines.push({ label: kindLabel(kind), values: data.utilisation[kind] });
        });
      } else if (what === "cards") {
        var pool = data.pool[el.dataset.kind];
        if (pool) {
          ["used", "free", "total"].forEach(function (w) {
            lines.push({ label: text[w], values: pool[w] });
          });
        }
      } else if (what === "queue" || what === "waits") {
        var part = data.partitions[el.dataset.partition] || {};
        var names = what === "queue" ? ["pending", "running"] : ["wait_mean_m", "wait_max_m"];
        unit = what === "queue" ? "" : " " + text.minutes;
        Object.keys(part).forEach(function (kind) {
          names.forEach(function (w) {
            if (part[kind][w]) {
              lines.push({ label: text[w] + " · " + kindLabel(kind), values: part[kind][w] });
            }
          });
        });
      } else if (what === "nodes") {
        unit = " %";
        Object.keys(data.nodes).forEach(function (node) {
          Object.keys(data.nodes[node]).forEach(function (kind) {
            lines.push({ label: node + " · " + kindLabel(kind), values: data.nodes[node][kind] });
          });
        });
      }
      draw(el, { t: data.t, lines: lines }, unit, data.end - data.start);
    });
  }

  fetch(root.dataset.seriesUrl, {
    credentials: "same-origin", headers: { Accept: "application/json" }
  }).then(function (response) {
    return response.ok ? response.json() : Promise.reject(response.status);
  }).then(charts).catch(function () {
    root.querySelectorAll(".chart[data-chart]").forEach(function (el) {
      el.textContent = text.failed;
    });
  });
}());
