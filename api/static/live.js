// Live refresh of a study page: polls the study's progress (a small JSON document) and reloads
// the page when new trials were stored, while the "live refresh" box is ticked.
(function () {
  "use strict";
  var box = document.getElementById("live");
  var toggle = document.getElementById("live-refresh");
  if (!box || !toggle) return;
  var seen = Number(box.dataset.trials);
  function poll() {
    if (!toggle.checked || document.hidden) return;
    fetch(box.dataset.progress, { headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (progress) {
        if (!progress) return;
        document.getElementById("live-trials").textContent = progress.trials;
        if (progress.trials !== seen) window.location.reload();
      })
      .catch(function () { /* the server is away for a moment: try again next time */ });
  }
  window.setInterval(poll, 5000);
})();
