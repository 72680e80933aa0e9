"""Shopper wording shared by the sample world and the race-suite generator: how a request names an item,
its constraints, services, prices and vouchers.

Every phrase keeps the constrained value verbatim (``black``, ``750ml``, ``stainless steel``), so the
request states each fact the reward checks and a keyword search built from the request can find the
item. Template choice is driven by the caller's draws (``random.Random`` or the generator's hash-derived
draws) so problems stay deterministic. The replayed generator sbgen-1 words its requests with these
templates too, so changing one changes the bytes of that version's suites (its tests pin them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from shoppingbench.problems.models import Voucher
from shoppingbench.problems.terms import Draws

SKU_PHRASES: Final[dict[str, tuple[str, ...]]] = {
    "color_family": ("in {v}", "in {v} color", "colored {v}", "in the {v} color"),
    "size": ("in size {v}", "size {v}", "in {v}", "in the {v} size"),
    "capacity": ("with {v} capacity", "in {v}", "the {v} one"),
    "phone_model": ("for {v}", "that fits the {v}", "for my {v}"),
    "flavor": ("in {v} flavor", "{v} flavored", "with {v} flavor"),
    "scent": ("with a {v} scent", "in {v} scent", "{v} scented"),
    "shade": ("in shade {v}", "in the shade {v}", "in {v}"),
    "pack": ("in a {v} pack", "{v} per pack", "the {v} pack"),
    "variant": ("in the {v} variant", "{v} version", "the {v} option"),
    "select": ("the {v} type", "in the {v} option"),
    "storage_capacity": ("with {v} storage", "in {v}", "{v} capacity"),
    "wattage": ("rated {v}", "in {v}", "the {v} version"),
    "weight": ("weighing {v}", "in {v}", "the {v} one"),
    "compatibility": ("compatible with {v}", "for {v}", "that works with {v}"),
    "connectivity": ("with {v} connection", "the {v} version"),
    "scale": ("in {v} scale", "{v} scale"),
}
"""Templates per sku key; ``{v}`` is the option value."""

ATTRIBUTE_PHRASES: Final[dict[str, tuple[str, ...]]] = {
    "material": ("made of {v}", "in {v}", "crafted from {v}", "with a {v} build"),
    "brand": ("from {v}", "by {v}", "from the brand {v}"),
    "country_origin": ("made in {v}", "from {v}", "with {v} origin"),
    "activity_type": ("for {v}", "meant for {v}", "good for {v}"),
    "age_group": ("for {v}", "suitable for {v}"),
    "age_range": ("for ages {v}", "suitable for {v}"),
    "base_type": ("with an {v} base", "{v} base"),
    "battery_capacity": ("with {v} battery", "{v} capacity"),
    "bedding_type": ("of the {v} type", "that is a {v}"),
    "belt_material": ("made of {v}", "crafted from {v}"),
    "belt_styles": ("in a {v} style", "{v} style"),
    "bottle_type": ("of the {v} type", "that is a {v}", "{v} style"),
    "breed_size": ("for {v} breeds", "suitable for {v} dogs"),
    "case_type": ("of the {v} type", "{v} style"),
    "certification": ("with {v} certification", "{v} certified"),
    "character": ("with a {v} character", "featuring {v}", "{v} themed"),
    "clock_type": ("of the {v} type", "that is {v}"),
    "closure": ("with a {v} closure", "that closes with a {v}"),
    "coffee_type": ("of the {v} kind", "in {v} form"),
    "compatibility": ("compatible with {v}", "that fits {v}"),
    "compatible_os": ("compatible with {v}", "that works with {v}"),
    "concentration": ("in {v} concentration", "{v} strength"),
    "connectivity": ("with {v} connectivity", "in the {v} version"),
    "connector_type": ("with a {v} connector", "{v} type"),
    "container_type": ("of the {v} kind", "usable as a {v}"),
    "cookware_type": ("of the {v} type", "usable as a {v}"),
    "detergent_type": ("in {v} form", "the {v} type"),
    "diaper_type": ("of the {v} type", "in {v} style"),
    "dietary_needs": ("that is {v}", "with {v} dietary label"),
    "dosage_form": ("in {v} form", "as a {v}"),
    "earring_type": ("of the {v} type", "in {v} style"),
    "eco_credentials": ("that is {v}", "labelled {v}"),
    "fa_pattern": ("with a {v} pattern", "in a {v} design", "featuring a {v} look"),
    "fan_type": ("of the {v} type", "{v} style"),
    "features": ("that is {v}", "which is {v}", "{v}"),
    "finish": ("with a {v} finish", "in {v} finish"),
    "fit": ("with a {v} fit", "in {v} fit"),
    "fragrance_family": ("in the {v} family", "with {v} notes"),
    "hair_benefits": ("for {v}", "that helps with {v}"),
    "hair_type": ("for {v} hair", "suited to {v} hair"),
    "heel_height": ("with a {v} heel", "about {v} high"),
    "helmet_type": ("of the {v} type", "{v} style"),
    "ink_type": ("with {v} ink", "using {v} ink"),
    "interface": ("with {v} interface", "using {v}"),
    "jewelry_type": ("of the {v} type", "{v} style"),
    "lens_type": ("with {v} lenses", "{v} lens"),
    "life_stage": ("for {v} dogs", "made for the {v} stage", "suitable for {v}"),
    "litter_type": ("of the {v} type", "{v} kind"),
    "load_capacity": ("with {v} load capacity", "that holds up to {v}"),
    "luggage_type": ("of the {v} size class", "usable as {v}"),
    "mask_type": ("of the {v} type", "{v} grade"),
    "measuring_type": ("of the {v} type", "working as a {v}"),
    "nail_type": ("for {v} nails", "meant for {v} polish"),
    "number_of_pages": ("with {v} pages", "that has {v} pages"),
    "occasion": ("for {v}", "suitable for {v}", "perfect for {v}"),
    "os": ("running {v}", "with {v}"),
    "pack_size": ("in a pack of {v}", "{v} per pack"),
    "paper_size": ("in {v} paper size", "{v} sized"),
    "pattern": ("with a {v} pattern", "in a {v} design"),
    "pet_type": ("for a {v}", "made for {v}s"),
    "plant_type": ("for {v} plants", "suited to {v} use"),
    "power_source": ("powered by {v}", "running on {v}"),
    "roast_level": ("with a {v} roast", "{v} roast"),
    "room": ("for the {v}", "made for the {v}"),
    "season": ("rated {v}", "for {v} use"),
    "skill_level": ("for {v} players", "at {v} level"),
    "skin_type": ("for {v} skin", "suited to {v} skin"),
    "skincare_benefits": ("for {v}", "that helps with {v}"),
    "spf": ("with {v}", "rated {v}"),
    "sticker_placement": ("for the {v}", "meant for the {v}"),
    "storage_type": ("of the {v} type", "usable as a {v}"),
    "stove_compatibility": ("that works on {v} stoves", "compatible with {v} stoves"),
    "style": ("in a {v} style", "with a {v} look"),
    "suitable_for": ("suitable for {v}", "for {v} machines"),
    "thematic_graphic_design": ("with {v} designs", "featuring {v} prints"),
    "theme": ("with a {v} theme", "{v} themed"),
    "thickness": ("{v} thick", "with {v} thickness"),
    "vacuum_type": ("of the {v} type", "{v} style"),
    "version": ("supporting {v}", "with {v}"),
    "video_resolution": ("recording in {v}", "with {v} resolution"),
    "warranty_type": ("with {v}", "covered by {v}"),
    "watch_movement": ("with {v} movement", "{v} movement"),
    "water_resistance": ("water resistant to {v}", "with {v} water resistance"),
    "weight": ("weighing up to {v}", "for {v}"),
}
"""Templates per attribute key; ``{v}`` is the attribute value."""

SERVICE_PHRASES: Final[dict[str, tuple[str, ...]]] = {
    "official": ("from an official store", "from LazMall", "with LazMall perks", "sold by an official store",
                 "from a verified official shop"),
    "freeShipping": ("with free shipping", "available with free shipping", "that ships for free",
                     "with free delivery"),
    "COD": ("with cash on delivery", "that I can pay for on delivery", "with COD available",
            "payable by cash on delivery"),
    "flashsale": ("on flash sale", "with a LazFlash deal", "currently in a flash sale", "on a flash deal"),
}

_CURRENCY: Final = ("pesos", "PHP", "pesos", "php")


def number(value: float) -> str:
    """``98`` for whole numbers, else up to two decimals."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")


_PRICE_PHRASES: Final[dict[str, tuple[str, ...]]] = {
    "between": ("priced between {lo} and {hi} {unit}", "costing between {lo} and {hi} {unit}",
                "in the {lo} to {hi} {unit} range"),
    "greater than": ("priced above {lo} {unit}", "that costs over {lo} {unit}",
                     "costing more than {lo} {unit}"),
    "less than": ("priced under {hi} {unit}", "that costs less than {hi} {unit}", "below {hi} {unit}",
                  "for no more than {hi} {unit}"),
}


def price_phrase(relation: str, low: float | None, high: float | None, rng: Draws) -> str:
    """A price constraint in words; bounds are inclusive, as the reward checks them."""
    unit = rng.choice(_CURRENCY)
    template = rng.choice(_PRICE_PHRASES[relation])
    return template.format(lo=number(low or 0), hi=number(high or 0), unit=unit)


def service_phrase(service: str, rng: Draws) -> str:
    return rng.choice(SERVICE_PHRASES[service])


def sku_phrase(key: str, value: str, rng: Draws) -> str:
    if value.startswith(("with ", "for ")):
        return value  # "with brake", "with 2 batteries" already read as a clause
    templates = SKU_PHRASES.get(key, ("with {k} {v}",))
    return rng.choice(templates).format(v=value, k=key.replace("_", " "))


def attribute_phrase(key: str, value: str, rng: Draws) -> str:
    templates = ATTRIBUTE_PHRASES.get(key, ("with {k} {v}",))
    return rng.choice(templates).format(v=value, k=key.replace("_", " "))


_AN_WORDS: Final = frozenset({"rgb", "hdmi", "led", "lcd", "mp5", "sj4000", "x96", "hd", "fm", "m4", "m16",
                               "ar15", "f-91w", "s9", "mx", "l07", "r1", "s10", "8k", "18k", "11"})


_PAIRED: Final = frozenset({"shoes", "sneakers", "sandals", "slippers", "slides", "flops", "heels", "pumps",
                            "earrings", "headphones", "sunglasses", "socks", "earbuds", "glasses"})


def article(noun_phrase: str) -> str:
    """``a``/``an`` by sound ("an RGB", "an 8k"); plurals get "a pair of" or "some" instead."""
    last = noun_phrase.rsplit(" ", 1)[-1].lower()
    if last in _PAIRED:
        return "a pair of " + noun_phrase
    if last.endswith("s") and not last.endswith(("ss", "us")):
        return "some " + noun_phrase
    first = noun_phrase.split(" ", 1)[0].lower()
    vowel_sound = (first[:1] in "aeiou" and not first.startswith(("eu", "uni", "usb", "uv", "one"))) or (
        first in _AN_WORDS or first.startswith(("8", "18", "11")))
    return ("an " if vowel_sound else "a ") + noun_phrase


def item_phrase(name: str, clauses: list[str], rng: Draws, *, price_last: bool) -> str:
    """``name`` with its article and the clauses in a shuffled order; with ``price_last`` (the last clause
    is the price) it stays last most of the time, as people say it."""
    tail = clauses.pop() if price_last and rng.random() < 0.7 else None
    rng.shuffle(clauses)
    if tail is not None:
        clauses.append(tail)
    phrase = article(name)
    return f"{phrase} {join_clauses(clauses, rng)}" if clauses else phrase


def join_clauses(clauses: Sequence[str], rng: Draws) -> str:
    """``"x"``, ``"x and y"`` or ``"x, y, and z"`` (the Oxford comma is a coin flip, as with people)."""
    if len(clauses) <= 1:
        return "".join(clauses)
    last_joint = ", and " if len(clauses) > 2 and rng.random() < 0.5 else " and "
    return ", ".join(clauses[:-1]) + last_joint + clauses[-1]


_PRODUCT_OPENERS: Final = (
    "Looking for {item}.", "I need {item}.", "Can you find {item}?", "Show me {item}.",
    "Searching for {item}.",
    "I'm looking for {item}.", "Help me find {item}.", "I want to buy {item}.", "Please find {item}.",
    "Find me {item}.", "Do you have {item}?", "Any good options for {item}?", "I'd like to order {item}.",
    "Could you look for {item}?", "Hi! I'm shopping for {item}.",
)


def product_query(item: str, rng: Draws) -> str:
    return rng.choice(_PRODUCT_OPENERS).format(item=item)


_ORDINALS: Final = ("First", "Second", "Third", "Fourth")


def shop_query(items: Sequence[str], rng: Draws) -> str:
    """A request for one shop that sells every item in ``items`` (2 to 4)."""
    roll = rng.random()
    if roll < 0.3:
        last = "Lastly" if len(items) > 2 else _ORDINALS[len(items) - 1]
        parts = [f"{_ORDINALS[i] if i < len(items) - 1 else last}, {item}." for i, item in enumerate(items)]
        opener = rng.choice(("Looking for a shop that offers these items:",
                             "I need one store that has all of these:", "Which shop sells the following?"))
        closer = rng.choice(("", " Please show shops that sell all of them.",
                             " All from the same seller, please."))
        return f"{opener} {' '.join(parts)}{closer}"
    joined = join_clauses(items, rng)
    return rng.choice((
        f"Find shops offering {joined}.",
        f"Is there a single seller that has {joined}?",
        f"Show me a store where I can get {joined} in one order.",
        f"I'd like to buy everything from one shop: {joined}.",
        f"Looking for a shop that sells {joined}.",
        f"Can you find one store carrying {joined}?",
        f"Which shop has {joined}? I want them all from the same seller.",
    ))


def voucher_items(items: Sequence[str], rng: Draws) -> str:
    joined = join_clauses(items, rng)
    return rng.choice((f"Show me {joined}.", f"I'm looking for {joined}.", f"I need {joined}.",
                       f"Looking for {joined}.", f"Help me buy {joined}.", f"I want to get {joined}."))


def voucher_rules(voucher: Voucher) -> str:
    """The budget and voucher rules, spelled out the way ShoppingBench voucher requests do."""
    scope = ("The voucher applies to all products." if voucher.voucher_type == "platform"
             else "The voucher only applies to the products from the same shop.")
    if voucher.discount_type == "fixed":
        benefit = f"It provides a fixed discount of `{number(voucher.face_value or 0)}`."
    else:
        percent = number(round((voucher.discount or 0) * 100, 2))
        cap = number(voucher.cap or 0)
        benefit = f"It provides a percentage discount of `{percent}%` with a cap of `{cap}`."
    threshold = number(voucher.threshold)
    return (f"My budget is only `{number(voucher.budget)}`, but I have a voucher with the following rules:\n"
            f"1. {scope}\n"
            f"2. It is valid only when the total price of the products exceeds `{threshold}`.\n"
            f"3. {benefit}")
