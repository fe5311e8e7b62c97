// arenastat HTML report: an icicle of the name tree (embedded by html.cpp).
// Reads the JSON in <script id="arenastat-data">: {mode, pid, program, process,
// report}, where report is the --json report (or diff) of docs/report.md and
// docs/cli.md. Every name reaches the page through textContent or
// setAttribute only, never as markup.
(function () {
  'use strict';
  var t0 = performance.now();
  // Integers beyond 2^53 (counters are int64) lose digits as numbers: where
  // the browser gives the reviver the source text, it is kept by holder and
  // key for display (exact()); the numbers stay numbers for arithmetic.
  var exactText = new WeakMap();
  var meta = JSON.parse(document.getElementById('arenastat-data').textContent, function (k, v, ctx) {
    if (typeof v === 'number' && !Number.isSafeInteger(v) && ctx && typeof ctx.source === 'string' &&
        /^-?[0-9]+$/.test(ctx.source)) {
      var m = exactText.get(this);
      if (!m) { m = Object.create(null); exactText.set(this, m); }
      m[k] = ctx.source;
    }
    return v;
  });
  var data = meta.report;
  var diff = meta.mode === 'diff';
  var $ = function (id) { return document.getElementById(id); };
  var ROW = 22, MIN_PX = 3, MAX_DEPTH = 40, MAX_CELLS = 3000;

  // ------------------------------------------------------------ formatting
  function human(v) {
    var neg = v < 0, b = Math.abs(v);
    if (b < 1024) return (neg ? '-' : '') + b + 'B';
    var units = 'KMGTPE', i = -1;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; ++i; }
    var s = b < 10 ? b.toFixed(1) : b.toFixed(0);
    if (s === '1024' && i < units.length - 1) { s = '1.0'; ++i; }
    return (neg ? '-' : '') + s + units[i];
  }
  function bytes(v) { return v + ' B (' + human(v) + ')'; }
  // The figure `key` of `holder` as the JSON wrote it (every digit).
  function exact(holder, key) {
    var m = exactText.get(holder);
    return m && key in m ? m[key] : String(holder[key]);
  }
  // A name as the text reports write it (docs/report.md, "Names in output"):
  // C0 controls, DEL, C1 controls, U+2028/9, the bidirectional controls and
  // marks, and the characters that print as nothing, as \xHH of their UTF-8 bytes, a backslash as \\, and a byte outside UTF-8
  // (which the JSON marks as U+FFFD and two hex digits) as \xHH. So a name
  // cannot add lines to a tooltip or reorder the text around it.
  function shown(name) {
    var out = '';
    for (var i = 0; i < name.length; ++i) {
      var c = name.charCodeAt(i);
      if (c === 0xfffd) {
        if (name.charCodeAt(i + 1) === 0xfffd) { out += '\ufffd'; ++i; continue; }
        var hx = name.slice(i + 1, i + 3);
        if (/^[0-9a-f]{2}$/.test(hx)) { out += '\\x' + hx; i += 2; continue; }
        out += '\ufffd';
        continue;
      }
      if (c === 0x5c) out += '\\\\';
      else if (c < 0x20 || c === 0x7f) out += '\\x' + (c < 16 ? '0' : '') + c.toString(16);
      else if (c >= 0x80 && c <= 0x9f) out += '\\xc2\\x' + c.toString(16);
      else if (c === 0xdb40 && i + 1 < name.length && name.charCodeAt(i + 1) >= 0xdc00 &&
               name.charCodeAt(i + 1) <= 0xdc7f) {
        // U+E0000-U+E007F (tag characters), a surrogate pair: f3 a0 80-81 xx.
        var t = name.charCodeAt(i + 1) - 0xdc00;
        out += '\\xf3\\xa0\\x' + (0x80 | (t >> 6)).toString(16) + '\\x' + (0x80 | (t & 0x3f)).toString(16);
        ++i;
      } else if (c === 0x00ad || c === 0x034f || c === 0x061c) {
        out += '\\x' + (0xc0 | (c >> 6)).toString(16) + '\\x' + (0x80 | (c & 0x3f)).toString(16);
      } else if (c === 0x115f || c === 0x1160 || c === 0x17b4 || c === 0x17b5 || c === 0x180e || c === 0x200b ||
                 c === 0x200e || c === 0x200f || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2064) ||
                 (c >= 0x2066 && c <= 0x2069) || c === 0x3164 || c === 0xfeff || c === 0xffa0 ||
                 (c >= 0xfff9 && c <= 0xfffb)) {
        var b1 = 0xe0 | (c >> 12), b2 = 0x80 | ((c >> 6) & 0x3f), b3 = 0x80 | (c & 0x3f);
        out += '\\x' + b1.toString(16) + '\\x' + b2.toString(16) + '\\x' + b3.toString(16);
      } else out += name.charAt(i);
    }
    return out;
  }
  // A JSON number with `digits` decimals; '-' for null (the JSON report
  // writes a non-finite number as null).
  function fixed(v, digits) { return typeof v === 'number' ? v.toFixed(digits) : '-'; }
  // Own keys only: a tag or counter named "constructor" or "__proto__" is a
  // name like any other, never a member every object inherits.
  function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }
  function signed(v) { return (v > 0 ? '+' : '') + v; }
  function sbytes(v) { return signed(v) + ' B (' + (v > 0 ? '+' : '') + human(v) + ')'; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fig(parent, label, value) {
    var s = el('span');
    s.appendChild(document.createTextNode(label + ' '));
    s.appendChild(el('b', '', value));
    parent.appendChild(s);
  }

  // ------------------------------------------------------------ the tree
  var SIZES = diff
    ? [['peak', 'peak change'], ['live', 'live change'], ['count', 'count change']]
    : [['peak', 'peak bytes'], ['live', 'live bytes'], ['runs', 'runs']];
  var COLORS = diff ? [['change', 'growth / shrink']] : [['kind', 'kind'], ['tag', 'dominant tag']];

  function isOverflow(e) { return e.kind === 'folded'; }
  function groupOf(e) { return isOverflow(e) ? 'overflow' : e.kind === 'account' ? 'accounts' : 'scopes'; }
  function entryValue(e, size) {
    if (diff) return Math.abs(e[size].change);
    // An overflow row stands for its folded entries: their peaks summed, as a
    // box above several entries sums theirs.
    if (size === 'peak') return isOverflow(e) ? e.peak_sum_bytes : e.peak_bytes;
    if (size === 'live') return e.kind === 'account' ? Math.max(0, e.live_bytes) : 0;
    return e.kind !== 'account' ? e.count : 0;
  }

  function node(label, path, parent) {
    return { label: label, path: path, parent: parent, kids: [], byLabel: null, entry: null,
             group: parent ? parent.group : '', value: 0, own: 0, change: 0, tags: null, entries: 0, rows: 0,
             folded: 0 };
  }
  var root = node('all', '', null);
  root.byLabel = new Map();
  var groups = {};
  function child(n, label, path) {
    if (!n.byLabel) n.byLabel = new Map();
    var c = n.byLabel.get(label);
    if (!c) { c = node(label, path, n); n.byLabel.set(label, c); n.kids.push(c); }
    return c;
  }
  var entries = data.entries.concat(data.folded || []);
  for (var i = 0; i < entries.length; ++i) {
    var e = entries[i], g = groupOf(e);
    var gn = groups[g];
    if (!gn) { gn = groups[g] = child(root, g, ''); gn.group = g; gn.isGroup = true; }
    var n = gn, parts = e.name.split('/'), path = '';
    for (var p = 0; p < parts.length; ++p) {
      if (parts[p] === '') continue;            // "a//b" and a leading '/' add no level
      path = path ? path + '/' + parts[p] : parts[p];
      n = child(n, parts[p], path);
    }
    if (n === gn) n = child(gn, e.name === '' ? '(empty name)' : e.name, e.name);
    if (n.entry) { n.extra = (n.extra || []).concat([e]); } else { n.entry = e; }
    e.node = n;
  }

  function tagsOf(e) { return e.at_peak || {}; }
  // Sizes of every node for one size key; tags summed for the colouring.
  // The entries on node n itself: one, or several whose names differ only in
  // empty parts ("a/b", "a//b", "/a/b", "a/b/"), or none.
  function ownEntries(n) { return n.entry ? [n.entry].concat(n.extra || []) : []; }
  // n.entries: entries and overflow rows at n and below; n.rows: the overflow
  // rows among them; n.folded: the entries those rows stand for.
  function measure(n, size) {
    var v = 0, ch = 0, cnt = 0, rows = 0, folded = 0;
    var own = ownEntries(n);
    for (var k = 0; k < own.length; ++k) {
      v += entryValue(own[k], size); ++cnt;
      if (!diff && isOverflow(own[k])) { ++rows; folded += own[k].folded_entries; }
      if (diff) ch += own[k][size].change;
    }
    n.own = v;
    for (var j = 0; j < n.kids.length; ++j) {
      var c = n.kids[j];
      measure(c, size);
      v += c.value; ch += c.change; cnt += c.entries; rows += c.rows; folded += c.folded;
    }
    n.value = v; n.change = ch; n.entries = cnt; n.rows = rows; n.folded = folded;
    n.kids.sort(function (a, b) { return b.value - a.value || (a.label < b.label ? -1 : 1); });
  }
  function tagTotals(n) {
    if (n.tags) return n.tags;
    var t = Object.create(null);
    var own = ownEntries(n);
    for (var k = 0; k < own.length; ++k) {
      var a = tagsOf(own[k]);
      for (var key in a) t[key] = (t[key] || 0) + a[key];
    }
    for (var j = 0; j < n.kids.length; ++j) {
      var ct = tagTotals(n.kids[j]);
      for (var key2 in ct) t[key2] = (t[key2] || 0) + ct[key2];
    }
    n.tags = t;
    return t;
  }
  function dominantTag(n) {
    var t = tagTotals(n), best = '', bv = 0;
    for (var k in t) if (t[k] > bv) { bv = t[k]; best = k; }
    return best;
  }

  // ------------------------------------------------------------ colours
  // Tags get well-separated hues in name order (the palette repeats past ten).
  var PALETTE = [212, 28, 130, 0, 275, 175, 50, 320, 95, 245];
  var tagHue = null;
  function hueOf(tag) {
    if (!tagHue) {
      tagHue = Object.create(null);
      Object.keys(tagTotals(root)).sort().forEach(function (t, i) { tagHue[t] = PALETTE[i % PALETTE.length]; });
    }
    return tag in tagHue ? tagHue[tag] : 0;
  }
  var KIND_HUE = { scopes: 212, accounts: 140, overflow: 30 };
  function colour(n, depth) {
    var light = 58 + Math.min(depth, 6) * 4 + (n.entry ? 0 : 6);
    if (diff) {
      if (n.change > 0) return 'hsl(4,72%,' + light + '%)';
      if (n.change < 0) return 'hsl(200,70%,' + light + '%)';
      return 'hsl(0,0%,' + (light + 8) + '%)';
    }
    if (n.group === 'overflow') return 'hsl(30,10%,' + light + '%)';
    if (state.color === 'tag') {
      var t = dominantTag(n);
      return t ? 'hsl(' + hueOf(t) + ',60%,' + light + '%)' : 'hsl(0,0%,80%)';
    }
    return 'hsl(' + KIND_HUE[n.group] + ',55%,' + light + '%)';
  }

  // ------------------------------------------------------------ figures of one node
  // The figures of one entry, appended to `rows`.
  function entryRows(e, rows) {
    if (!diff && isOverflow(e)) {
      rows.push(['kind', 'folded (overflow: entries beyond the table cap)']);
      rows.push(['entries folded', String(e.folded_entries)]);
      rows.push(['largest peak', bytes(e.peak_bytes)]);
      rows.push(['sum of peaks', bytes(e.peak_sum_bytes)]);
      rows.push(['runs', String(e.count)]);
      rows.push(['limit hits (oom)', String(e.oom_count)]);
      rows.push(['errors', String(e.err_count)]);
      rows.push(['time', fixed(e.time_s, 6) + ' s total']);
    } else if (!diff) {
      rows.push(['kind', e.kind]);
      rows.push(['peak', bytes(e.peak_bytes)]);
      var tags = e.at_peak || {};
      for (var t in tags) rows.push(['  ' + shown(t) + ' at peak', bytes(tags[t])]);
      if (e.kind === 'account') {
        rows.push(['live', bytes(e.live_bytes)]);
        var lt = e.live_by_tag || {};
        for (var t2 in lt) rows.push(['  ' + shown(t2) + ' live', bytes(lt[t2])]);
        rows.push(['allocated', bytes(e.allocated_bytes)]);
        rows.push(['allocations', String(e.allocations)]);
        rows.push(['frees', String(e.frees)]);
      } else {
        rows.push(['runs', String(e.count)]);
        rows.push(['last peak', bytes(e.last_peak_bytes)]);
        var cs = e.counters || {};
        var cl = e.counters_last || {};
        for (var c in cs) {
          var now = exact(cs, c), last = has(cl, c) ? exact(cl, c) : now;
          rows.push(['counter ' + shown(c), now + (last !== now ? ' (last ' + last + ')' : '')]);
        }
        rows.push(['result (latest run)', e.result || '-']);
        rows.push(['limit hits (oom)', String(e.oom_count)]);
        rows.push(['errors', String(e.err_count)]);
        rows.push(['time', fixed(e.time_s, 6) + ' s total, ' + fixed(e.last_time_s, 6) + ' s last']);
        rows.push(['thread', String(e.thread)]);
      }
    } else {
      rows.push(['kind', e.kind]);
      rows.push(['status', e.status]);
      ['live', 'peak'].forEach(function (f) {
        rows.push([f + ' before', bytes(e[f].before)]);
        rows.push([f + ' after', bytes(e[f].after)]);
        rows.push([f + ' change', sbytes(e[f].change)]);
      });
      ['count', 'blocks'].forEach(function (f) {
        rows.push([f, e[f].before + ' \u2192 ' + e[f].after + ' (' + signed(e[f].change) + ')']);
      });
    }
  }
  function rowsOf(n) {
    var rows = [];
    if (n.rest) {
      rows.push([n.count + (n.why === 'budget' ? ' names below, not drawn (the page draws ' + MAX_CELLS + ' boxes at most)'
                            : n.why === 'deep' ? ' names below, not drawn (the page draws ' + MAX_DEPTH + ' levels at most)'
                            : ' smaller names') + ', together',
                 isCount() ? String(n.value) : bytes(n.value)]);
      rows.push(['', 'click to zoom into ' + fullName(n.parent)]);
      return rows;
    }
    if (n.isGroup || n === root) {
      rows.push(['entries', String(n.entries - n.rows)]);
      if (n.rows) rows.push(['overflow rows', n.rows + ', standing for ' + n.folded + ' folded entries']);
    }
    var own = ownEntries(n);
    for (var k = 0; k < own.length; ++k) {
      if (own.length > 1) rows.push(['entry ' + (k + 1) + ' of ' + own.length, shown(own[k].name)]);
      entryRows(own[k], rows);
    }
    if (n.kids.length || own.length !== 1) {
      var label = SIZES.filter(function (s) { return s[0] === state.size; })[0][1];
      var total = isCount() ? String(n.value) : bytes(n.value);
      var what = !own.length ? 'sum of ' : n.kids.length ? 'with everything below: ' : 'the ' + own.length + ' entries together: ';
      rows.push([what + label, total]);
      if (diff) rows.push(['net ' + label, sbytes(n.change)]);
      if (n.kids.length || !own.length) rows.push(['names below', String(n.entries - own.length)]);
    }
    return rows;
  }
  function isCount() { return state.size === 'runs' || state.size === 'count'; }
  function fullName(n) {
    if (n === root) return 'all';
    if (n.rest) return n.count + ' more below ' + fullName(n.parent);
    if (n.isGroup) return n.label;
    if (n.extra) return shown(n.path) + ' (' + ownEntries(n).length + ' entries)';
    return n.entry ? shown(n.entry.name) : shown(n.path) + '/';
  }
  function titleOf(n) {
    return fullName(n) + '\n' + rowsOf(n).map(function (r) { return r[0] + ': ' + r[1]; }).join('\n');
  }
  function showDetails(n) {
    var box = $('details');
    box.textContent = '';
    box.appendChild(el('h2', '', fullName(n)));
    var table = el('table');
    rowsOf(n).forEach(function (r) {
      var tr = el('tr');
      tr.appendChild(el('td', '', r[0]));
      tr.appendChild(el('td', '', r[1]));
      table.appendChild(tr);
    });
    box.appendChild(table);
  }

  // ------------------------------------------------------------ state and hash
  var state = { size: SIZES[0][0], color: COLORS[0][0], search: '', zoom: null, pinned: null };
  function readHash() {
    var h = location.hash.replace(/^#/, '');
    h.split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i < 0) return;
      var k = kv.slice(0, i), v;
      try { v = decodeURIComponent(kv.slice(i + 1).replace(/\+/g, ' ')); } catch (err) { return; }
      if (k === 'search') state.search = v;
      else if (k === 'size' && SIZES.some(function (s) { return s[0] === v; })) state.size = v;
      else if (k === 'color' && COLORS.some(function (s) { return s[0] === v; })) state.color = v;
      else if (k === 'zoom') state.zoomPath = v;
      else if (k === 'show') state.showPath = v;
    });
  }
  function findPath(path) {
    var found = null;
    (function walk(n) {
      if (found) return;
      if (ownEntries(n).some(function (e) { return e.name === path; }) || (!n.isGroup && n.path === path)) {
        found = n;
        return;
      }
      for (var i = 0; i < n.kids.length; ++i) walk(n.kids[i]);
    })(root);
    return found;
  }

  // ------------------------------------------------------------ drawing
  var cells = [];   // drawn nodes, index = data-i
  function draw() {
    var chart = $('chart');
    var width = Math.max(300, chart.clientWidth || 900);
    var top = state.zoom || root;
    var frag = document.createDocumentFragment();
    cells = [];
    var maxDepth = 0;
    // Breadth first, so that the budget of MAX_CELLS boxes keeps the top
    // levels whole: names nested deep would otherwise draw a box per level
    // each (300 names 45 levels deep: 11,702 boxes).
    var queue = [];
    function place(n, x, w, depth) {
      var d = el('div', 'cell');
      d.style.left = x.toFixed(2) + 'px';
      d.style.top = (depth * ROW) + 'px';
      d.style.width = w.toFixed(2) + 'px';
      d.style.background = colour(n, depth);
      if (w < 24) d.classList.add('narrow');
      if (n.isGroup || n === root) d.classList.add('group');
      if (n.group === 'overflow') d.classList.add('overflow');
      if (diff && n.change !== 0) d.classList.add(n.change > 0 ? 'grew' : 'shrank');
      d.textContent = n === top && top !== root && !n.isGroup ? fullName(n) : shown(n.label);
      d.title = titleOf(n);
      d.setAttribute('data-i', String(cells.length));
      d.setAttribute('data-path', n.entry ? n.entry.name : n.isGroup ? '' : n.path);
      if (n.entry) d.setAttribute('data-entry', '');
      if (n === state.pinned) d.classList.add('selected');
      cells.push(n);
      frag.appendChild(d);
      if (depth > maxDepth) maxDepth = depth;
      if (n.value <= 0) return;
      var below = n.value - n.own;           // what the kids hold together
      if (below > 0 && depth >= MAX_DEPTH) {
        placeRest(n, n.kids.length, below, x, w * below / n.value, depth + 1, 'deep');
        return;                               // too deep: one box zooms into them
      }
      if (below > 0 && cells.length + queue.length - next + n.kids.length > MAX_CELLS) {
        placeRest(n, n.kids.length, below, x, w * below / n.value, depth + 1, 'budget');
        return;                               // over budget: one box zooms into them
      }
      var cx = x;
      for (var i = 0; i < n.kids.length; ++i) {
        var c = n.kids[i];
        var cw = w * c.value / n.value;
        if (cw < MIN_PX) {                      // sorted: every later one is narrower
          var rest = 0;
          for (var k = i; k < n.kids.length; ++k) rest += n.kids[k].value;
          var rw = w * rest / n.value;
          if (rw >= 1 && rest > 0) placeRest(n, n.kids.length - i, rest, cx, rw, depth + 1);
          break;
        }
        queue.push([c, cx, cw, depth + 1]);
        cx += cw;
      }
    }
    // One box for the names too narrow to draw: clicking it zooms into their parent.
    // `why`: 'budget' (the page has drawn MAX_CELLS boxes), 'deep' (they are
    // below MAX_DEPTH levels), or none (each is narrower than MIN_PX).
    function placeRest(parent, count, value, x, w, depth, why) {
      var d = el('div', 'cell rest' + (w < 24 ? ' narrow' : ''), '+' + count);
      d.style.left = x.toFixed(2) + 'px';
      d.style.top = (depth * ROW) + 'px';
      d.style.width = w.toFixed(2) + 'px';
      d.style.background = 'hsl(0,0%,86%)';
      var pseudo = { rest: true, parent: parent, label: '+' + count, kids: [], entry: null, value: value,
                     count: count, path: parent.path, group: parent.group, why: why || '' };
      d.title = titleOf(pseudo);
      d.setAttribute('data-i', String(cells.length));
      cells.push(pseudo);
      frag.appendChild(d);
      if (depth > maxDepth) maxDepth = depth;
    }
    var next = 0;
    if (top.value > 0) queue.push([top, 0, width, 0]);
    while (next < queue.length) {
      var q = queue[next++];
      place(q[0], q[1], q[2], q[3]);
    }
    chart.textContent = '';
    chart.style.height = ((maxDepth + 1) * ROW + 4) + 'px';
    chart.appendChild(frag);
    if (top.value <= 0)
      chart.appendChild(el('p', 'hint', entries.length ? 'Nothing to show for this size: every value is 0.'
                                                       : 'No entries to show.'));
    drawCrumbs(top);
    applySearch();
    document.body.setAttribute('data-cells', String(cells.length));
  }
  function drawCrumbs(top) {
    var nav = $('crumbs');
    nav.textContent = '';
    var chain = [];
    for (var n = top; n; n = n.parent) chain.unshift(n);
    chain.forEach(function (c) {
      var b = el('button', '', c === root ? 'all' : shown(c.label));
      b.addEventListener('click', function () { zoom(c === root ? null : c); });
      nav.appendChild(b);
    });
  }
  function zoom(n) {
    state.zoom = n;
    draw();
  }

  // ------------------------------------------------------------ search
  var results = $('results'), searchStamp = 0;
  function applySearch() {
    var q = state.search.toLowerCase();
    var chart = $('chart');
    chart.classList.toggle('searching', q !== '');
    results.textContent = '';
    if (!q) { $('search-status').textContent = ''; return; }
    var matches = 0, listed = 0, drawn = 0;
    var hits = [];
    var stamp = ++searchStamp;
    for (var i = 0; i < entries.length; ++i) {
      // The name as stored or as shown (a search for "\x0a" finds what the page shows so).
      if (entries[i].name.toLowerCase().indexOf(q) >= 0 || shown(entries[i].name).toLowerCase().indexOf(q) >= 0) {
        ++matches; hits.push(entries[i]);
        for (var up = entries[i].node.parent; up && up.hitStamp !== stamp; up = up.parent) up.hitStamp = stamp;
      }
    }
    var boxes = chart.children;
    for (var j = 0; j < boxes.length; ++j) {
      var n = cells[+boxes[j].getAttribute('data-i')];
      if (!n || n.rest) continue;
      var name = n.entry ? n.entry.name : n.path;
      var m = !n.isGroup && n !== root &&
              (name.toLowerCase().indexOf(q) >= 0 || shown(name).toLowerCase().indexOf(q) >= 0);
      boxes[j].classList.toggle('match', m);
      boxes[j].classList.toggle('match-below', !m && n.hitStamp === stamp);
      if (m) ++drawn;
    }
    hits.sort(function (a, b) { return entryValue(b, state.size) - entryValue(a, state.size); });
    hits.slice(0, 50).forEach(function (e) {
      var li = el('li', 'result', shown(e.name));
      li.addEventListener('click', function () { zoom(e.node.kids.length ? e.node : e.node.parent); showDetails(e.node); });
      results.appendChild(li);
      ++listed;
    });
    $('search-status').textContent = matches + (matches === 1 ? ' entry matches' : ' entries match') +
        ' (' + drawn + ' drawn' + (matches > listed ? ', first ' + listed + ' listed' : '') + ')';
  }

  // ------------------------------------------------------------ header
  function header() {
    var p = meta.process || {};
    document.title = (diff ? 'arenastat diff' : 'arenastat') + ' \u2014 pid ' + meta.pid;
    $('title').textContent = diff ? 'arenastat: growth since the baseline' : 'arenastat memory map';
    var pr = $('process');
    fig(pr, 'pid', String(meta.pid));
    if (meta.program) fig(pr, 'program', meta.program);
    if (p.rss_bytes !== undefined) {
      fig(pr, 'VmRSS', human(p.rss_bytes));
      fig(pr, 'VmHWM', human(p.hwm_bytes));
      fig(pr, 'RssAnon', human(p.rss_anon_bytes));
    }
    if (p.jemalloc) {
      fig(pr, 'jemalloc allocated', human(p.jemalloc.allocated_bytes));
      fig(pr, 'active', human(p.jemalloc.active_bytes));
      fig(pr, 'resident', human(p.jemalloc.resident_bytes));
      fig(pr, 'mapped', human(p.jemalloc.mapped_bytes));
    }
    var tt = $('totals');
    if (diff) {
      if (data.baseline && data.baseline.time) fig(tt, 'baseline', data.baseline.time + ' (' + fixed(data.baseline.age_s, 1) + ' s ago)');
      var T = data.total;
      fig(tt, 'live', human(T.live.after) + ' (' + (T.live.change >= 0 ? '+' : '') + human(T.live.change) + ')');
      fig(tt, 'peak', human(T.peak.after) + ' (' + (T.peak.change >= 0 ? '+' : '') + human(T.peak.change) + ')');
      fig(tt, 'changed', String(data.changed));
      fig(tt, 'new', String(data['new']));
      fig(tt, 'vanished', String(data.vanished));
      fig(tt, 'unchanged', String(data.unchanged));
    } else {
      var s = 0, sp = 0, a = 0, ap = 0, live = 0, ov = 0, oom = 0;
      for (var i = 0; i < entries.length; ++i) {
        var e = entries[i];
        if (isOverflow(e)) ++ov;
        else if (e.kind === 'account') { ++a; ap += e.peak_bytes; live += e.live_bytes; }
        else { ++s; sp += e.peak_bytes; if (e.oom_count) ++oom; }
      }
      fig(tt, 'entries', String(entries.length - ov) + (ov ? ' and ' + ov + ' overflow rows' : ''));
      fig(tt, 'scopes', s + ', peaks sum to ' + human(sp));
      fig(tt, 'accounts', a + ', peaks sum to ' + human(ap) + ', live ' + human(live));
      if (oom) fig(tt, 'scopes that hit a limit', String(oom));
      var tb = data.table || {};
      if (ov) fig($('notes'), 'overflow', ov + ' row(s) stand for ' + (tb.folded_entries || 0) +
                  ' entries folded beyond the table cap of ' + tb.max + ' (hatched)');
      if (tb.lost_folds) fig($('notes'), 'lost folds', String(tb.lost_folds));
    }
    var notes = $('notes');
    if (data.omitted_smaller) fig(notes, 'omitted', data.omitted_smaller + ' entries below ' + human(data.options.min_size_bytes));
    if (data.omitted_beyond_top) fig(notes, 'omitted', data.omitted_beyond_top + ' entries beyond --top=' + data.options.top);
    if (data.omitted) fig(notes, 'omitted', data.omitted + ' entries (-s, --top)');
  }
  function legend() {
    var lg = $('legend');
    lg.textContent = '';
    function item(text, c) { var s = el('span', '', text); s.style.setProperty('--c', c); lg.appendChild(s); }
    if (diff) { item('grew', 'hsl(4,72%,62%)'); item('shrank', 'hsl(200,70%,62%)'); return; }
    if (state.color === 'kind') {
      item('scope', 'hsl(212,55%,58%)'); item('account', 'hsl(140,55%,58%)');
      if (groups.overflow) item('overflow', 'hsl(30,10%,58%)');
      return;
    }
    var all = Object.keys(tagTotals(root)).sort();
    all.forEach(function (t) { item(t, 'hsl(' + hueOf(t) + ',60%,58%)'); });
  }

  // ------------------------------------------------------------ controls
  function options(select, list, value) {
    list.forEach(function (o) { var op = el('option', '', o[1]); op.value = o[0]; select.appendChild(op); });
    select.value = value;
  }
  readHash();
  header();
  var sizeSel = $('size'), colorSel = $('color'), search = $('search');
  options(sizeSel, SIZES, state.size);
  options(colorSel, COLORS, state.color);
  search.value = state.search;
  measure(root, state.size);
  if (state.zoomPath) state.zoom = findPath(state.zoomPath);
  legend();
  draw();
  if (state.showPath) {
    var toShow = findPath(state.showPath);
    if (toShow) { state.pinned = toShow; showDetails(toShow); }
  }

  sizeSel.addEventListener('change', function () { state.size = sizeSel.value; measure(root, state.size); draw(); });
  colorSel.addEventListener('change', function () { state.color = colorSel.value; legend(); draw(); });
  var timer = 0;
  search.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.search = search.value; applySearch(); }, 120);
  });
  var chart = $('chart');
  function cellOf(ev) {
    var t = ev.target;
    return t && t.classList && t.classList.contains('cell') ? cells[+t.getAttribute('data-i')] : null;
  }
  chart.addEventListener('mouseover', function (ev) {
    var n = cellOf(ev);
    if (n && !state.pinned) showDetails(n);
  });
  chart.addEventListener('click', function (ev) {
    var n = cellOf(ev);
    if (!n) return;
    var top = state.zoom || root;
    state.pinned = n;
    showDetails(n);
    if (n.rest) zoom(n.parent === root ? null : n.parent);
    else if (n === top) zoom(top.parent && top.parent !== root ? top.parent : null);
    else if (n.kids.length) zoom(n);
    else ev.target.classList.add('selected');
  });
  window.addEventListener('hashchange', function () {
    readHash();
    search.value = state.search; sizeSel.value = state.size; colorSel.value = state.color;
    measure(root, state.size);
    if (state.zoomPath) state.zoom = findPath(state.zoomPath);
    legend(); draw();
  });
  window.addEventListener('resize', function () { clearTimeout(timer); timer = setTimeout(draw, 150); });

  // Measured by the browser test (docs/cli.md): script time, and time since navigation started.
  var t1 = performance.now();
  document.body.setAttribute('data-render-ms', (t1 - t0).toFixed(1));
  document.body.setAttribute('data-since-navigation-ms', t1.toFixed(1));
  document.body.setAttribute('data-ready', '1');
})();
