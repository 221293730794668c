"""The report's "how far to trust this ranking" part: the judge's biases and the intervals.

Reads ``summary.json``'s ``judge`` and ``confidence`` objects and the final scores' intervals
(``workflows/tournament/judge_stats.py``, ``workflows/tournament/bootstrap.py``) and says in
sentences what they mean; the template escapes every value.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["fit_sentences", "interval_text", "judge_rows", "judge_sentences", "winner_line"]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _rate_text(rate: dict[str, Any] | None) -> str:
    if not rate or rate.get("rate") is None:
        return "–"
    return (
        f"{_pct(rate['rate'])} ({rate['count']} of {rate['total']}; 95% CI "
        f"{_pct(rate['low'])}–{_pct(rate['high'])})"
    )


def interval_text(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"[{low:+.2f}, {high:+.2f}]"


def judge_rows(judge: dict[str, Any]) -> list[dict[str, str]]:
    """One row per judge (the run as a whole first): position, flips, agreement."""
    rows = [
        {
            "judge": "all verdicts" if len(judge.get("judges", [])) > 1 else "judge",
            "first": _rate_text(judge.get("first_position_win_rate")),
            "flips": _rate_text(judge.get("flip_rate")),
            "agreement": "–",
        }
    ]
    if judge.get("panel"):
        rows.append(
            {
                "judge": "the panel's verdicts",
                "first": _rate_text(judge["panel"].get("first_position_win_rate")),
                "flips": "–",
                "agreement": "–",
            }
        )
    for name, entry in (judge.get("by_judge") or {}).items():
        rows.append(
            {
                "judge": name,
                "first": _rate_text(entry.get("first_position_win_rate")),
                "flips": _rate_text(entry.get("flip_rate")),
                "agreement": _rate_text(entry.get("agreement_with_majority")),
            }
        )
    return rows


def _bias_sentence(who: str, entry: dict[str, Any], remedy: str) -> str | None:
    bias = entry.get("position_bias") or {}
    if not bias.get("significant"):
        return None
    first = entry.get("first_position_win_rate") or {}
    side = "first" if bias["estimate"] > 0 else "second"
    return (
        f"{who} favours the {side}-shown candidate: it won {_pct(first.get('rate'))} of "
        f"decisive verdicts (95% CI {_pct(first.get('low'))}–{_pct(first.get('high'))}), "
        f"where an unbiased judge gives 50%; {remedy}."
    )


def judge_sentences(judge: dict[str, Any]) -> list[str]:
    """What a reader should know: a significant position bias (naming the judge), flips,
    self-preference risks."""
    sentences = []
    both = judge.get("orders") == "both"
    if judge.get("by_judge"):
        remedy = (
            "each pair was judged in both orders, so it cancels out in its own votes"
            if both
            else "the panel's judges see the pairs in alternating orders, so its combined "
            "verdicts carry no order effect in expectation"
        )
        for name, entry in judge["by_judge"].items():
            if sentence := _bias_sentence(f"Judge {name}", entry, remedy):
                sentences.append(sentence)
        panel = judge.get("panel") or {}
        if sentence := _bias_sentence("The panel", panel, "more pairs would tell chance apart"):
            sentences.append(sentence)
    else:
        remedy = (
            "both orders were judged, so it cancels out in the verdicts (an order-sensitive "
            "pair counts as a tie)"
            if both
            else "presentation order was randomised per pair, so it adds noise rather than "
            "favouring a candidate; judge both orders (--judge-orders both) to cancel it"
        )
        name = (judge.get("judges") or ["the judge"])[0]
        if sentence := _bias_sentence(f"The judge ({name})", judge, remedy):
            sentences.append(sentence)
    flips = judge.get("flip_rate") or {}
    if flips.get("rate"):
        sentences.append(
            f"{_pct(flips['rate'])} of the pairs seen in both orders got a different verdict "
            "when the order was swapped; each of those counts as a tie."
        )
    longer = judge.get("longer_win_rate") or {}
    if longer.get("significant"):
        side = "longer" if longer["rate"] > 0.5 else "shorter"
        sentences.append(
            f"The verdicts favour the {side} candidate: the longer one won "
            f"{_pct(longer['rate'])} of {longer['total']} decisive verdicts between candidates "
            f"of different lengths (95% CI {_pct(longer['low'])}–{_pct(longer['high'])}); "
            "length may go with quality, so read it as a flag to look into, not proof of a "
            "bias."
        )
    for name, own in (judge.get("own_family_win_rate") or {}).items():
        if own.get("significant"):
            sentences.append(
                f"Judge {name} gave the win to the candidate of its own family in "
                f"{_pct(own['rate'])} of its decisive verdicts between its family and another "
                f"(95% CI {_pct(own['low'])}–{_pct(own['high'])}): more than chance; compare "
                "the other judges' rate on the same pairs before reading it as self-preference."
            )
    for risk in judge.get("self_preference_risk") or []:
        sentences.append(f"Possible self-preference: {risk['note']}.")
    return sentences


def winner_line(confidence: dict[str, Any] | None, final: list[dict[str, Any]]) -> str | None:
    """Whether the winner's interval separates it from the runner-up's."""
    if not confidence or not confidence.get("resamples") or len(final) < 2:
        return None
    winner, runner_up = final[0], final[1]
    w = interval_text(winner.get("score_low"), winner.get("score_high"))
    r = interval_text(runner_up.get("score_low"), runner_up.get("score_high"))
    if confidence.get("intervals_valid") is False:
        return f"The intervals are not valid here: {confidence.get('note', 'see summary.json')}."
    top = confidence.get("winner_top_share")
    share = f"; it tops {_pct(top)} of the {confidence['resamples']} resamples" if top else ""
    if confidence.get("winner_separated"):
        return (
            f"Winner {winner['candidate_id']}: its 95% interval {w} lies above runner-up "
            f"{runner_up['candidate_id']}'s {r}, so the comparisons separate them{share}."
        )
    return (
        f"Winner {winner['candidate_id']}: its 95% interval {w} overlaps runner-up "
        f"{runner_up['candidate_id']}'s {r}, so the comparisons do not separate them{share}; "
        "more judge calls (a higher m) would."
    )


def fit_sentences(
    length: dict[str, Any] | None, weighting: str | None, judge: dict[str, Any]
) -> list[str]:
    """How the scores were fitted, where it is not plain Bradley-Terry: the length term and
    its coefficient, confidence weighting, and (on the sim) whether confidence tracks
    correctness."""
    sentences = []
    if length and length.get("identified") is False:
        sentences.append(
            "Length-controlled scores: these comparisons cannot tell the candidates' lengths "
            "from their own strength (every decisive verdict went the way length points, or "
            "length follows the candidates exactly), so the fit gives the differences to "
            "length and the scores say little; judge more pairs, or rank without length "
            "control."
        )
    elif length and length.get("coefficient") is not None and length.get("model") == "mixture":
        share, low, high = length["coefficient"], length["low"], length["high"]
        verdict = (
            "the judge favours the longer candidate beyond chance"
            if length.get("significant")
            else "no length preference beyond chance"
        )
        sentences.append(
            f"Length-controlled scores: between candidates of different lengths the judge is "
            f"estimated to pick the longer one whatever its quality in {share:.0%} of verdicts "
            f"(95% interval {low:.0%} to {high:.0%}): {verdict}. The scores and ranks are net "
            "of it."
        )
    elif length and length.get("coefficient") is not None:
        c, low, high = length["coefficient"], length["low"], length["high"]
        verdict = (
            f"the judge favours the {'longer' if c > 0 else 'shorter'} candidate beyond chance"
            if length.get("significant")
            else "no length preference beyond chance"
        )
        sentences.append(
            f"Length-controlled scores: Bradley-Terry with a length term; the longer answer "
            f"gains {c:+.2f} log-odds (odds x{math.exp(c):.2f}; 95% CI {low:+.2f} to "
            f"{high:+.2f}): {verdict}. The scores and ranks are net of it."
        )
    elif length:
        sentences.append("Length control was asked for, but no length coefficient was fitted.")
    if weighting == "confidence":
        sentences.append(
            "Verdicts are weighted by the judge's confidence (1 + 2 x confidence: a sure verdict "
            "counts three times)."
        )
    agree = judge.get("confidence_vs_correctness") or {}
    if agree.get("concordance") is not None:
        sentences.append(
            f"On the simulated candidates the judge named the better one in "
            f"{_pct((agree.get('correct') or {}).get('rate'))} of {agree['verdicts']} verdicts; "
            f"its mean confidence was {agree['mean_confidence_correct']:.2f} when right and "
            f"{agree['mean_confidence_incorrect']:.2f} when wrong (a right verdict had the "
            f"higher confidence {_pct(agree['concordance'])} of the time)."
        )
    return sentences
