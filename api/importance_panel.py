"""The parameter importances panel of a study page, served on its own request.

Computing importances (:func:`api.importance.importances`: Optuna's PED-ANOVA, which copies each
trial into an in-memory Optuna study) was most of the first view of a 10 000-trial study's page.
The page therefore leaves a placeholder that its script (``api/static/live.js``) fills from
``GET /dashboard/importances?study=&family=``: the page shows as soon as its own charts are
drawn, and the importances follow. They are kept per study state like the rest of the page
(:meth:`api.study_cache.CachedStudy.importances`, with its rule for a growing study).
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from api.importance import importances
from api.study_cache import CachedStudy, Importances
from api.study_page import scope
from tuner.report.svg_charts import Bar, BarLayout, bar_chart

# What the summary above the chart names: the few parameters that mattered most.
NAMED = 3


def importance_chart(found: Importances) -> Markup | None:
    """The importances as bars (percent), most important first; None when there are none."""
    if not found.values:
        return None
    bars = [Bar(name, 100 * value, text=f"{value:.0%}") for name, value in found.values.items()]
    title = "What mattered: parameter importance (Optuna PED-ANOVA, top 10 % vs all)"
    if not found.current:
        title += f", as of {found.trials} trials"
    return bar_chart(bars, unit="%", title=title, layout=BarLayout(label_width=110))


def importance_context(cached: CachedStudy, family: str | None) -> dict[str, Any]:
    """The template context of the panel: the importances of the ok trials within ``family``
    (None: every family), computed here once per study state.

    Raises:
        InputError: a family the study does not have (naming it).
    """
    scoped, _ = scope(cached, family)
    found = cached.importances(family, lambda: importances(scoped))
    return {
        "found": found,
        "family": family,
        "most": list(found.values.items())[:NAMED],
        "chart": importance_chart(found),
    }
