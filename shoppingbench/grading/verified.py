"""The arena's verified-answer rule (SPEC 3), on top of the exact reference scorer.

An attempt that ran behind the verified proxy succeeds only if every id it recommended was returned to
it by ``find_product`` or ``view_product_information``, according to the proxy's log of that attempt.
An id the agent never retrieved can only come from outside the dialogue (a table of answers, a leaked
suite, a hidden step), so such an answer is not the agent's work whatever the scorer says of it: the
attempt fails with the reason ``unverified_answer``, and the reference grades are kept beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from shoppingbench.records import AttemptFailure, ProxyCall

UNVERIFIED_ANSWER: Final = "unverified_answer"
_SHOWN_IDS: Final = 5


def returned_ids(proxy_log: Iterable[ProxyCall]) -> set[str]:
    """Every product id a tool answered to this attempt (the proxy's successful search/view calls)."""
    return {pid for call in proxy_log if call.kind == "search" and call.status == 200
            for pid in call.product_ids}


@dataclass(frozen=True)
class AnswerCheck:
    """The recommended ids no tool returned to the attempt (none: the answer is verified)."""

    unverified: tuple[str, ...]

    @property
    def verified(self) -> bool:
        return not self.unverified

    def failure(self) -> AttemptFailure:
        shown = ", ".join(self.unverified[:_SHOWN_IDS])
        more = f" and {len(self.unverified) - _SHOWN_IDS} more" if len(self.unverified) > _SHOWN_IDS else ""
        return AttemptFailure(kind=UNVERIFIED_ANSWER,
                              reason=f"recommended ids no find_product or view_product_information call "
                                     f"returned to this attempt: {shown}{more}")


def check_answer(answer: Sequence[str], proxy_log: Iterable[ProxyCall]) -> AnswerCheck:
    """Check ``answer`` (the scorer's recommended ids; ``""`` marks a skipped position) against the log."""
    returned = returned_ids(proxy_log)
    return AnswerCheck(unverified=tuple(pid for pid in answer if pid and pid not in returned))
