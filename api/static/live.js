// The study page's script. It fills the panels the server computes on their own request (the
// parameter importances: an HTML fragment, so the page never waits for them), and, while the
// "live refresh" box is ticked, polls the study's progress (a small JSON document) and reloads
// the page when new trials were stored.
(function () {
  "use strict";

  function loadPanels() {
    document.querySelectorAll("[data-fragment]").forEach(function (panel) {
      fetch(panel.dataset.fragment, { headers: { Accept: "text/html" } })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.text();
        })
        .then(function (html) {
          panel.innerHTML = html;
          panel.dataset.loaded = "true";
        })
        .catch(function (error) {
          panel.textContent = "This panel could not be loaded (" + error.message
            + "): reload the page to try again.";
          panel.dataset.loaded = "failed";
        });
    });
  }

  function refreshLive() {
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
  }

  loadPanels();
  refreshLive();
})();
