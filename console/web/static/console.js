// Live pages: reload the page's content in place every data-live milliseconds,
// asking the server for the content only (X-Console-Fragment), so filters,
// scroll position and the header stay as they are.
(function () {
  "use strict";
  var main = document.getElementById("content");
  if (!main || !main.dataset.live) { return; }
  var every = Math.max(1000, parseInt(main.dataset.live, 10) || 5000);
  var busy = false;
  function refresh() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(window.location.href, { headers: { "X-Console-Fragment": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 401) { window.location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== undefined) {
          var open = keysOfOpen();
          main.innerHTML = html;
          reopen(open);
          main.dataset.refreshed = String((parseInt(main.dataset.refreshed || "0", 10)) + 1);
        }
      })
      .catch(function () {})
      .finally(function () { busy = false; });
  }
  // A row's details (a GPU's model and driver, an action's executor) stay
  // open across a refresh: rows are known by their id or data-gpu.
  function keyOf(tr) { return tr ? (tr.id || tr.dataset.gpu || "") : ""; }
  function keysOfOpen() {
    var keys = [];
    main.querySelectorAll("details[open]").forEach(function (d) {
      var k = keyOf(d.closest("tr"));
      if (k) { keys.push(k); }
    });
    return keys;
  }
  function reopen(keys) {
    if (!keys.length) { return; }
    main.querySelectorAll("tr").forEach(function (tr) {
      var d = tr.querySelector("details");
      if (d && keys.indexOf(keyOf(tr)) >= 0) { d.open = true; }
    });
  }
  window.setInterval(refresh, every);
})();
