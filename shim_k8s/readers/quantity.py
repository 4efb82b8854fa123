"""Kubernetes resource quantities, as apimachinery's `resource.Quantity` parses and prints them.

Grammar (what `ParseQuantity` accepts; anything else is a QuantityError):

    quantity  ::= sign? digits? ('.' digits?)? suffix
    suffix    ::= '' | 'n' | 'u' | 'm' | 'k' | 'M' | 'G' | 'T' | 'P' | 'E'        decimal SI
                | 'Ki' | 'Mi' | 'Gi' | 'Ti' | 'Pi' | 'Ei'                         binary SI
                | ('e' | 'E') sign? digits                                        decimal exponent

so `.5`, `5.`, `1.G`, `+1`, `1e3`, `129e6`, `1500u` and `400m` are all quantities (the last is 0.4: a
memory request of `400m` is 0.4 bytes). As Kubernetes does:
- a value is kept exactly, then rounded up (away from zero) to a whole number of nano-units: `0.1n`
  is `1n`; here it is held as that integer of nano-units;
- a binary-suffixed value is capped at 2^63-1 (and one under 1 is decimal);
- `value()` and `milli_value()` round up, away from zero, to a whole unit or milli-unit;
- `canonical()` is `Quantity.String()`'s canonical form: the largest suffix (a multiple of three for
  decimal, of 1024 for binary) that loses nothing, so `1.5` prints `1500m` and `1536Mi` stays `1536Mi`.

Kubernetes prints a value it parsed in canonical shape as it was written (so `+1` stays `+1` there);
`canonical()` always gives the canonical form. Values are bounded here (exponents beyond
`MAX_EXPONENT`): no resource a node or pod can name is near that, and an unbounded exponent would
make the exact value arbitrarily large.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"
NANO = 10**9
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1  # apimachinery's bound on an exponent
MAX_EXPONENT = 1_000  # a larger decimal exponent is refused (a smaller one rounds up to 1n, as upstream)
MAX_LENGTH = 200  # characters: a longer text is refused, not computed

_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {power // 10: suffix for suffix, power in _BINARY.items()}
_BINARY_SUFFIX[0] = ""
# sign, whole digits, fraction digits (None: no point), suffix: the shape apimachinery scans
_SHAPE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")


class QuantityError(ValueError):
    """Not a quantity Kubernetes would accept, or beyond what pykorn can count."""


@dataclass(frozen=True, slots=True)
class Quantity:
    nanos: int  # the value in nano-units, exact (Kubernetes keeps nothing finer)
    format: str = DECIMAL_SI  # how it was written, which decides how it prints

    def value(self) -> int:
        """Whole units, rounded up away from zero (`Quantity.Value()`)."""
        return _ceil_away(self.nanos, NANO)

    def milli_value(self) -> int:
        """Milli-units, rounded up away from zero (`Quantity.MilliValue()`)."""
        return _ceil_away(self.nanos, NANO // 1000)

    def canonical(self) -> str:
        """The canonical text (`Quantity.String()` for a value built rather than parsed)."""
        if self.nanos == 0:
            return "0"
        if self.format == BINARY_SI and abs(self.nanos) >= 1024 * NANO and self.nanos % NANO == 0:
            number, power = _strip(self.nanos // NANO, 1024)
            if power in _BINARY_SUFFIX:
                return f"{number}{_BINARY_SUFFIX[power]}"
        mantissa, exponent = _strip(self.nanos, 10)
        exponent -= 9
        shift = exponent % 3  # down to a multiple of three: the mantissa grows, nothing is lost
        mantissa, exponent = mantissa * 10**shift, exponent - shift
        if self.format != DECIMAL_EXPONENT and exponent in _DECIMAL_SUFFIX:
            return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)  # beyond E: an exponent

    def __str__(self) -> str:
        return self.canonical()


def parse(text: str) -> Quantity:
    """A quantity as `resource.ParseQuantity` reads it; QuantityError with the reason otherwise."""
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a quantity: expected a string such as 500m or 2Gi")
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"{text[:20]!r}... is {len(text)} characters long: not a quantity pykorn reads")
    return _parse(text)


@lru_cache(maxsize=4096)
def nanos_of(text: str) -> int:
    """The value of a quantity as the API's JSON carries it (blanks around it trimmed, as the API
    server trims them), in nano-units: `parse(text.strip()).nanos`, cached (every pod's every request)."""
    return parse(text.strip()).nanos


@lru_cache(maxsize=4096)
def _parse(text: str) -> Quantity:
    shape = _SHAPE.fullmatch(text) if text else None
    if shape is None:
        raise QuantityError(f"{text!r} is not a quantity (examples: 500m, 2, 1.5Gi, 129e6)")
    sign, whole, fraction, suffix = shape.groups()
    fraction = fraction or ""
    if suffix in _DECIMAL:
        fmt, base, exponent = DECIMAL_SI, 10, _DECIMAL[suffix]
    elif suffix in _BINARY:
        fmt, base, exponent = BINARY_SI, 2, _BINARY[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        fmt, base, exponent = DECIMAL_EXPONENT, 10, int(suffix[1:])
        if abs(exponent) > INT32_MAX:
            raise QuantityError(f"{text!r}: the exponent is out of range")
        if exponent > MAX_EXPONENT:
            raise QuantityError(f"{text!r}: the exponent is beyond what pykorn counts ({MAX_EXPONENT})")
        exponent = max(exponent, -MAX_EXPONENT)  # smaller still rounds up to 1n: the same value
    else:
        raise QuantityError(f"{text!r} has an unknown suffix {suffix!r} (known: n u m k M G T P E, "
                            "Ki Mi Gi Ti Pi Ei, or an exponent such as e3)")  # fmt: skip
    digits = int((whole or "0") + fraction)
    # The exact value is digits * base**exponent / 10**len(fraction); in nano-units, rounded up.
    numerator, denominator = digits * NANO, 10 ** len(fraction)
    if base == 2:
        numerator <<= exponent
    elif exponent >= 0:
        numerator *= 10**exponent
    else:
        denominator *= 10**-exponent
    nanos = -(-numerator // denominator)  # rounded up: Kubernetes rounds away from zero, before the sign
    if fmt == BINARY_SI:
        nanos = min(nanos, INT64_MAX * NANO)
        if 0 < nanos < NANO:
            fmt = DECIMAL_SI  # as Kubernetes: a binary value under 1 is decimal (it prints so anyway)
    return Quantity(-nanos if sign == "-" else nanos, fmt)


def _ceil_away(value: int, unit: int) -> int:
    quotient = -(-abs(value) // unit)
    return -quotient if value < 0 else quotient


def _strip(value: int, base: int) -> tuple[int, int]:
    """`value` without its trailing factors of `base`, and how many there were."""
    times = 0
    while value and value % base == 0:
        value //= base
        times += 1
    return value, times
