"""The report's style sheet and its one small script, inlined into every page (nothing is fetched)."""

CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dde5; --bg:#fff; --alt:#f6f7f9; --accent:#2463eb;
        --pass:#137a3a; --below:#a15c00; --fail:#b3261e; --unscored:#5b6475; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1100px; padding: 20px 24px 60px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
a { color: var(--accent); } .muted { color: var(--muted); }
.headline { font-size: 15px; margin: 6px 0 14px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; min-width: 120px; }
.card b { display: block; font-size: 18px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: var(--alt); white-space: nowrap; }
th.sortable { cursor: pointer; user-select: none; } th.sortable::after { content: " ↕"; color: var(--muted); }
th[aria-sort=ascending]::after { content: " ↑"; } th[aria-sort=descending]::after { content: " ↓"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.tag { display: inline-block; background: var(--alt); border: 1px solid var(--line); border-radius: 10px;
       padding: 0 7px; margin: 1px 2px; font-size: 12px; }
.outcome { font-weight: 600; } .o-PASSED, .r-pass { color: var(--pass); } .o-BELOW_ONE, .r-partial { color: var(--below); }
.o-FAILED, .o-TIMED_OUT, .r-fail { color: var(--fail); } .o-UNSCORED { color: var(--unscored); }
.filters { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; margin: 8px 0; }
.filters label { color: var(--muted); } select, input { font: inherit; padding: 3px 6px; }
pre { background: var(--alt); border: 1px solid var(--line); border-radius: 4px; padding: 8px;
      white-space: pre-wrap; word-break: break-word; max-height: 420px; overflow: auto; margin: 4px 0 10px; }
details { margin: 4px 0 10px; } summary { cursor: pointer; }
.warn { background: #fff4e5; border: 1px solid #f0c27b; border-radius: 6px; padding: 8px 12px; }
.errors { background: #fdecea; border: 1px solid #f1aeb5; border-radius: 6px; padding: 8px 12px; }
.mock { background: #eef2ff; border-radius: 4px; padding: 0 5px; font-size: 12px; }
svg.chart { max-width: 100%; height: auto; display: block; margin: 6px 0 12px; }
svg .grid { stroke: #e6e8ee; } svg .tick, svg .label, svg .value, svg .legend { font-size: 11px; fill: var(--muted); }
svg .label { fill: var(--fg); } svg .bar { fill: #7ea6f6; } svg .bar.axis { fill: #9b8cf0; }
svg .bar.state-failed, svg .bar.state-tolerated { fill: #ef8a80; }
svg .ci { stroke: var(--fg); stroke-width: 1.5; fill: none; }
svg .line { fill: none; stroke-width: 2; } svg .line.mean { stroke: var(--accent); } svg .line.rate { stroke: var(--pass); }
svg .point.mean { fill: var(--accent); } svg .point.rate { fill: var(--pass); }
svg .point.current { stroke: var(--fg); stroke-width: 1.5; }
svg .point.regression { stroke: var(--fail); stroke-width: 3; }
svg .legend.mean { fill: var(--accent); } svg .legend.rate { fill: var(--pass); } svg .legend.regression { fill: var(--fail); }
nav { margin-bottom: 10px; }
"""

SCRIPT = """
(function () {
  var table = document.getElementById('runs');
  if (!table) return;
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var tag = document.getElementById('filter-tag');
  var outcome = document.getElementById('filter-outcome');
  var text = document.getElementById('filter-text');
  var shown = document.getElementById('shown');
  function apply() {
    var n = 0;
    rows.forEach(function (row) {
      var tags = (row.getAttribute('data-tags') || '').split(' ');
      var ok = (!tag.value || tags.indexOf(tag.value) >= 0) &&
               (!outcome.value || row.getAttribute('data-outcome') === outcome.value) &&
               (!text.value || row.textContent.toLowerCase().indexOf(text.value.toLowerCase()) >= 0);
      row.hidden = !ok;
      if (ok) n += 1;
    });
    shown.textContent = String(n);
  }
  [tag, outcome].forEach(function (el) { el.addEventListener('change', apply); });
  text.addEventListener('input', apply);
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
    if (!th.classList.contains('sortable')) return;
    th.addEventListener('click', function () {
      var ascending = th.getAttribute('aria-sort') !== 'ascending';
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      var numeric = th.getAttribute('data-type') === 'number';
      rows.sort(function (a, b) {
        var x = a.cells[index].getAttribute('data-sort'), y = b.cells[index].getAttribute('data-sort');
        var d = numeric ? (parseFloat(x) || -1) - (parseFloat(y) || -1) : x.localeCompare(y);
        return ascending ? d : -d;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  apply();
})();
"""
