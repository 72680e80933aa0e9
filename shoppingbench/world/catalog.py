"""Streaming, deterministic generator of a synthetic marketplace catalog.

Products come in *families*: one underlying item (leaf category, brand, product type, features,
material, model, price band) re-listed by several shops, each listing with its own colors, sizes,
price, services and a slightly different title. Families are what make the catalog hard to shop
in: the top search hit is often a near-duplicate that misses the requested color, size, material,
service or price, so a solver must check constraints instead of grabbing the first result.

Everything is drawn from one ``random.Random(seed)`` in a fixed order, so ``(n, seed)`` fixes the
output; nothing depends on ``hash()`` or global state. The generator keeps only the shop table in
memory (about ``n / 15`` small records) and yields products one at a time.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from shoppingbench.catalog.models import Product
from shoppingbench.world.vocabulary import (
    BRACKET_TAGS,
    DESCRIPTION_CLOSERS,
    DESCRIPTION_OPENERS,
    LEAVES,
    MARKETING,
    ORIGINS,
    Leaf,
)

_ACRONYMS = {word.lower(): word for word in (
    "COD", "USB", "LED", "RGB", "HDMI", "TWS", "SPF", "UV400", "PD", "OTG", "GPS", "DIY", "STEM", "TPU",
    "TPE", "PVC", "ABS", "EVA", "BPA", "PFOA", "HEPA", "AEG", "ICC", "TSA", "KF94", "N95", "GaN", "AMOLED",
)}


def _cap(word: str) -> str:
    return word[:1].upper() + word[1:]


def _title_case(text: str) -> str:
    # Seller titles keep acronyms upper-case ("USB C Cable", "【COD】"), everything else Capitalised.
    return " ".join(_ACRONYMS.get(word, _cap(word)) for word in text.split())


PRODUCTS_PER_SHOP = 15
"""Average listings per shop; a 50k-product world has about 3,300 shops."""

_MAX_SKU_OPTIONS = 8
_UNBRANDED_RATE = 0.18
_PRODUCT_ID_LENGTHS = ((7, 0.06), (8, 0.14), (9, 0.35), (10, 0.45))
_SHOP_ID_LENGTHS = ((5, 0.2), (6, 0.3), (7, 0.3), (8, 0.2))
_MARKETING_TITLES = tuple(_title_case(word) for word in MARKETING)
_BRACKET_TITLES = tuple(_title_case(tag) for tag in BRACKET_TAGS)
_WARRANTIES = ("No warranty", "7 days", "1 month", "6 months", "1 year")
# Title-cased vocabulary, computed once: casing words per product would cost more than choosing them.
_TITLED = {
    word: _title_case(word)
    for leaf in LEAVES
    for word in (*leaf.types, *leaf.features, *leaf.materials, *leaf.brands, *leaf.audiences, "")
}


class _IdSpace:
    """Distinct numeric ids of mixed lengths without remembering the ids handed out.

    For each length ``L`` the ``c``-th id is ``10**(L-1) + (a*c + b) mod 9*10**(L-1)``: an affine map
    with ``a`` coprime to the modulus is a bijection, so ids never repeat within a length and
    lengths never collide. Mixed lengths make string order differ from numeric order, as in the
    real catalog, which is what the search tie-break (ids compared as strings) must get right.
    """

    def __init__(self, rng: random.Random, lengths: tuple[tuple[int, float], ...]) -> None:
        self._lengths = [length for length, _ in lengths]
        self._cum_weights = list(itertools.accumulate(weight for _, weight in lengths))
        self._spaces: list[tuple[int, int, int, int]] = []
        for length in self._lengths:
            modulus = 9 * 10 ** (length - 1)
            multiplier = rng.randrange(modulus // 3, modulus)
            while math.gcd(multiplier, modulus) != 1:
                multiplier += 1
            self._spaces.append((10 ** (length - 1), modulus, multiplier, rng.randrange(modulus)))
        self._counters = [0] * len(self._lengths)

    def next(self, rng: random.Random) -> str:
        index = bisect.bisect(self._cum_weights, rng.random() * self._cum_weights[-1])
        # A length whose space is used up hands over to the next longer one.
        while self._counters[index] >= self._spaces[index][1]:
            index += 1
            if index == len(self._lengths):
                raise ValueError("id space exhausted")
        base, modulus, multiplier, offset = self._spaces[index]
        counter = self._counters[index]
        self._counters[index] = counter + 1
        return str(base + (multiplier * counter + offset) % modulus)


@dataclass(frozen=True, slots=True)
class _Shop:
    shop_id: str
    official: bool
    free_shipping_rate: float
    cod_rate: float


@dataclass(frozen=True, slots=True)
class _Family:
    """One underlying item that several shops list, with its title words cased once."""

    leaf: Leaf
    brand: str
    material: str
    model: str
    base_price: float
    axes: tuple[tuple[str, tuple[str, ...]], ...]
    attributes: dict[str, list[str]]
    popularity: float
    # Text computed once per family (titles, descriptions and specs are rebuilt per listing around it).
    brand_title: str
    type_title: str
    features_title: tuple[str, str]
    audience_title: str
    blurb: str
    short_description: str
    spec_head: str
    shops: list[_Shop]


def _marketplace_price(value: float, rng: random.Random) -> float:
    """Round like sellers do: whole pesos under 100, ...9 endings up to 1,000, ...49/...99 above."""
    if rng.random() < 0.08:
        return round(max(value, 1.0), 2)
    if value < 100:
        return float(max(1, round(value)))
    if value < 1000:
        return float(int(value / 10) * 10 + 9)
    return float(int(value / 100) * 100 + (49 if rng.random() < 0.4 else 99))


class _World:
    """Shops and families for one ``(n, seed)``; :meth:`products` streams the listings."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.rng = random.Random(seed)
        self.product_ids = _IdSpace(self.rng, _PRODUCT_ID_LENGTHS)
        self.leaf_weights = list(itertools.accumulate(leaf.weight for leaf in LEAVES))
        self.shops_by_top = self._make_shops(max(8, round(n / PRODUCTS_PER_SHOP)))

    def _make_shops(self, count: int) -> dict[str, list[_Shop]]:
        rng = self.rng
        shop_ids = _IdSpace(rng, _SHOP_ID_LENGTHS)
        tops = list(dict.fromkeys(leaf.top for leaf in LEAVES))
        top_weights: dict[str, float] = {}
        for leaf in LEAVES:
            top_weights[leaf.top] = top_weights.get(leaf.top, 0.0) + leaf.weight
        cum_top = list(itertools.accumulate(top_weights[top] for top in tops))
        by_top: dict[str, list[_Shop]] = {top: [] for top in tops}
        for _ in range(count):
            shop = _Shop(shop_id=shop_ids.next(rng), official=rng.random() < 0.08,
                         free_shipping_rate=rng.uniform(0.05, 0.8), cod_rate=rng.uniform(0.3, 0.95))
            # Most shops specialise in one top-level category; some also sell a second one.
            for top in {*rng.choices(tops, cum_weights=cum_top, k=1 if rng.random() < 0.7 else 2)}:
                by_top[top].append(shop)
        for top, shops in by_top.items():
            if not shops:
                shops.append(rng.choice([s for group in by_top.values() for s in group]))
            # Earlier shops get more listings (see _listing); shuffle so size is not tied to id.
            rng.shuffle(shops)
            by_top[top] = shops
        return by_top

    def _pick(self, values: tuple[str, ...] | list[str]) -> str:
        # Same distribution as rng.choice at a fraction of the cost; this runs millions of times.
        return values[int(self.rng.random() * len(values))]

    def _family(self) -> _Family:
        rng = self.rng
        pick = self._pick
        leaf = rng.choices(LEAVES, cum_weights=self.leaf_weights)[0]
        brand = pick(leaf.brands) if leaf.brands and rng.random() > _UNBRANDED_RATE else ""
        features = leaf.features
        first = int(rng.random() * len(features))
        second = (first + 1 + int(rng.random() * (len(features) - 1))) % len(features)
        axes = []
        for key, values in leaf.sku:
            if key == "color_family" or len(values) < 4:
                chosen = rng.sample(values, min(len(values), 1 + int(rng.random() ** 1.5 * 4)))
            else:
                # Sizes come in runs ("500ml, 750ml, 1l"), not scattered picks.
                width = 1 + int(rng.random() ** 1.5 * 4)
                start = int(rng.random() * (len(values) - min(width, len(values)) + 1))
                chosen = list(values[start:start + width])
            axes.append((key, tuple(chosen)))
        material = pick(leaf.materials) if leaf.materials else ""
        attributes: dict[str, list[str]] = {}
        if material:
            attributes["material"] = [material]
        for key, values in leaf.attributes:
            if rng.random() < 0.75:
                attributes[key] = [pick(values)]
        if brand and rng.random() < 0.6:
            attributes["brand"] = [brand]
        if rng.random() < 0.3:
            attributes["country_origin"] = [pick(ORIGINS)]
        product_type = pick(leaf.types)
        feature_pair = (features[first], features[second])
        audience = pick(leaf.audiences) if leaf.audiences and rng.random() < 0.35 else ""
        low, high = leaf.price
        option_text = "; ".join(f"{key.replace('_', ' ')}: {', '.join(values)}" for key, values in axes)
        brand_title = _TITLED[brand]
        made_of = f" made of {material}" if material else ""
        model = pick(leaf.models).upper() if leaf.models and rng.random() < 0.45 else ""
        features_title = (_TITLED[feature_pair[0]], _TITLED[feature_pair[1]])
        return _Family(
            leaf=leaf, brand=brand, material=material, model=model,
            base_price=low * (high / low) ** (rng.random() ** 1.4),
            axes=tuple(axes), attributes=attributes, popularity=rng.paretovariate(1.3),
            brand_title=brand_title, type_title=_TITLED[product_type],
            features_title=features_title,
            audience_title=f"For {_TITLED[audience]}" if audience else "",
            blurb=(f"{brand_title + ' ' if brand else ''}{product_type}{made_of}. {_cap(feature_pair[0])} "
                   f"and {feature_pair[1]}. Available options - {option_text}."),
            short_description=f"{features_title[0]} {product_type}{' for ' + audience if audience else ''}.",
            spec_head=f"Brand: {brand_title or 'No Brand'}" + (f"\nModel: {model}" if model else ""),
            shops=self.shops_by_top[leaf.top],
        )

    def _title(self, family: _Family, material: str, headline: str) -> str:
        random_ = self.rng.random
        brand = family.brand_title if random_() < 0.85 else ""
        feature1, feature2 = family.features_title
        if random_() < 0.5:
            feature1, feature2 = feature2, feature1
        marketing = _MARKETING_TITLES[int(random_() * len(_MARKETING_TITLES))] if random_() < 0.3 else ""
        size = _title_case(headline) if headline and random_() < 0.65 else ""
        audience = family.audience_title if random_() < 0.8 else ""
        mat = _TITLED[material] if material and random_() < 0.6 else ""
        extra = feature2 if random_() < 0.55 else ""
        product_type = family.type_title
        model = family.model
        roll = random_()
        if roll < 0.45:
            parts = (brand, marketing, feature1, mat, product_type, model, size, extra, audience)
        elif roll < 0.75:
            parts = (marketing, product_type, size, feature1, extra, mat, brand, model, audience)
        else:
            parts = (brand, product_type, model, size, "-", feature1, extra, mat, audience)
        text = " ".join(part for part in parts if part).strip(" -")
        style = random_()
        if style < 0.15:
            text = text.upper()
        elif style < 0.35:
            text = _cap(text.lower())
        if random_() < 0.1:
            text = f"【{self._pick(_BRACKET_TITLES)}】{text}"
        return text

    def _listing(self, family: _Family) -> Product:
        rng = self.rng
        random_ = rng.random
        leaf = family.leaf
        shops = family.shops
        # Skewed towards the front: a few big shops with many listings, a long tail of small ones.
        shop = shops[int(len(shops) * random_() ** 2.2)]
        material = family.material
        attributes = family.attributes
        # Some re-listings swap the material: same title words, different facts.
        if material and len(leaf.materials) > 1 and random_() < 0.12:
            material = self._pick(leaf.materials)
            attributes = {**attributes, "material": [material]}
        axes = []
        for key, values in family.axes:
            # A contiguous (wrapping) run of the family's values: cheaper than rng.sample.
            count = 1 + int(random_() * len(values))
            start = int(random_() * len(values))
            axes.append((key, (values[start:] + values[:start])[:count]))
        combos = list(itertools.islice(itertools.product(*(values for _, values in axes)), _MAX_SKU_OPTIONS))
        keys = [key for key, _ in axes]
        sku_options = {str(i + 1): dict(zip(keys, combo, strict=True)) for i, combo in enumerate(combos)}
        headline = axes[-1][1][0] if axes and axes[-1][0] != "color_family" else ""
        band = random_()
        factor = 0.45 if band < 0.06 else 1.8 if band < 0.1 else 0.8 + 0.5 * random_()
        service = ["official"] if shop.official else []
        if random_() < shop.free_shipping_rate:
            service.append("freeShipping")
        if random_() < shop.cod_rate:
            service.append("COD")
        if random_() < 0.08:
            service.append("flashsale")
        product_id = self.product_ids.next(rng)
        spec = f"{family.spec_head}\nMaterial: {material}" if material else family.spec_head
        return Product(
            product_id=product_id,
            shop_id=shop.shop_id,
            brand=family.brand,
            category=leaf.path,
            title=self._title(family, material, headline),
            short_description=family.short_description if random_() < 0.85 else "",
            description=f"{self._pick(DESCRIPTION_OPENERS)} {family.blurb} {self._pick(DESCRIPTION_CLOSERS)}",
            specification=f"{spec}\nWarranty: {self._pick(_WARRANTIES)}",
            price=_marketplace_price(family.base_price * factor, rng),
            sold_count=min(int((rng.paretovariate(0.95) - 1) * 6 * family.popularity), 500_000),
            sku_options=sku_options,
            attributes=attributes,
            main_image_url=f"https://img.market.example/p/{product_id}.jpg",
            product_url=f"https://market.example/products/i{product_id}.html",
            service=service,
        )

    def products(self) -> Iterator[Product]:
        made = 0
        while made < self.n:
            family = self._family()
            # Listing count per family is heavy-tailed: most items have a couple of sellers, some many.
            listings = min(1 + int(self.rng.expovariate(0.45)), 14, self.n - made)
            for _ in range(listings):
                yield self._listing(family)
            made += listings


def generate_products(n: int, seed: int = 0) -> Iterator[Product]:
    """Stream ``n`` synthetic marketplace products, fully determined by ``(n, seed)``."""
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    return _World(n, seed).products()
