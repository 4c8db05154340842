/* Usage over time with the vendored uPlot: stacked bars of card-hours per hour, day or month,
   drawn from the numbers the page carries (<script type="application/json"> in the figure, in
   the site's time zone and the reader's language). The page's own SVG chart and its table stay
   for readers without JavaScript; where uPlot draws, the SVG steps aside. */
(function () {
  "use strict";
  if (typeof uPlot === "undefined") {
    return;
  }
  var COLOURS = ["#3b6fd8", "#e8833a", "#2e9e5b", "#9b59b6", "#c0392b", "#16a2b8", "#8a93a3"];
  var lang = document.documentElement.lang || undefined;

  function formats(zone, step) {
    var base = { timeZone: zone };
    var when = step === "hour" ? { month: "numeric", day: "numeric", hour: "2-digit", minute: "2-digit" }
      : step === "day" ? { year: "numeric", month: "numeric", day: "numeric" }
        : { year: "numeric", month: "long" };
    var tick = step === "hour" ? { hour: "2-digit", minute: "2-digit" }
      : step === "day" ? { month: "numeric", day: "numeric" } : { year: "numeric", month: "short" };
    return {
      when: new Intl.DateTimeFormat(lang, Object.assign({}, base, when)),
      tick: new Intl.DateTimeFormat(lang, Object.assign({}, base, tick)),
      number: new Intl.NumberFormat(lang, { maximumFractionDigits: 2 })
    };
  }

  function draw(figure, d) {
    var f = formats(d.zone, d.step);
    // each series is drawn up to the sum of itself and those below it: stacked bars, the top
    // first so that the lower ones are painted over it
    var sums = [];
    var running = d.t.map(function () { return 0; });
    d.values.forEach(function (row) {
      running = running.map(function (v, i) { return v + row[i]; });
      // nothing of this group in a bucket: no bar of its own there (null draws none)
      sums.push(running.map(function (v, i) { return row[i] > 0 ? v : null; }));
    });
    var top = Math.max.apply(null, running.concat([0]));
    var data = [d.t];
    var series = [{
      label: d.time,
      value: function (u, v) { return v == null ? "—" : f.when.format(new Date(v * 1000)); }
    }];
    for (var i = d.values.length - 1; i >= 0; i--) {
      data.push(sums[i]);
      series.push({
        label: d.names[i],
        fill: COLOURS[Math.min(i, 6)],
        stroke: COLOURS[Math.min(i, 6)],
        paths: uPlot.paths.bars({ size: [0.8, 64] }),
        points: { show: false },
        value: (function (row) {
          return function (u, v, s, idx) {
            return idx == null ? "—" : f.number.format(row[idx]) + " " + d.unit;
          };
        }(d.values[i]))
      });
    }
    var holder = document.createElement("div");
    holder.className = "uplot-holder";
    var svg = figure.querySelector("svg.stack");
    figure.insertBefore(holder, svg);
    var width = function () { return Math.max(280, Math.min(figure.clientWidth || 720, 960)); };
    var plot = new uPlot({
      width: width(),
      height: 240,
      series: series,
      scales: { x: { time: true }, y: { range: function () { return [0, top > 0 ? top * 1.1 : 1]; } } },
      axes: [
        { space: 60, values: function (u, ticks) { return ticks.map(function (v) { return f.tick.format(new Date(v * 1000)); }); } },
        { size: 60, values: function (u, ticks) { return ticks.map(function (v) { return f.number.format(v); }); } }
      ],
      legend: { live: true }
    }, data, holder);
    svg.style.display = "none";
    var legend = figure.querySelector("ul.legend");
    if (legend) {
      legend.style.display = "none";  // uPlot's legend names them, with the values at the pointer
    }
    window.addEventListener("resize", function () { plot.setSize({ width: width(), height: 240 }); });
  }

  document.querySelectorAll("figure.usage-chart").forEach(function (figure) {
    var node = figure.querySelector("script[type='application/json']");
    if (node && figure.querySelector("svg.stack")) {
      draw(figure, JSON.parse(node.textContent));
    }
  });
}());
