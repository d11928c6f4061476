package domain

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Micros is an amount of US dollars in millionths of a dollar. Money is never a float.
type Micros int64

// MicrosPerUSD is one dollar.
const MicrosPerUSD Micros = 1_000_000

// Within reports whether amounts, each non-negative, add up to at most limit. It never adds past limit, so no
// sum wraps around however large an amount is (an estimate saturates at the largest Micros).
func Within(limit Micros, amounts ...Micros) bool {
	for _, a := range amounts {
		if a > limit {
			return false
		}
		limit -= a
	}
	return true
}

// CannotHold is the refusal of a call whose worst case (estimate) does not fit in what a budget has left: a 402 or
// 403 that says so, with both amounts in its message and its metadata (estimate_usd, remaining_usd), where a
// refusal that read "the limit is reached" puzzled a caller who had spent $0.002 of $1. budget names it ("this
// key's limit of $1 for the current month").
func CannotHold(base *Error, budget string, estimate, left Micros) *Error {
	return base.WithMsg(fmt.Sprintf("%s cannot hold this call: it may cost up to $%s (its worst case, reserved before "+
		"the call), and $%s is left (what was spent and what calls in flight hold count against it)", budget,
		estimate.Decimal(), left.Decimal())).With("estimate_usd", estimate.USD()).With("remaining_usd", left.USD())
}

// USD is the amount in dollars, for a number in a message's metadata (amounts are exact in Micros).
func (m Micros) USD() float64 { return float64(m) / float64(MicrosPerUSD) }

// Left is what limit leaves once amounts, each non-negative, are taken from it: 0 when they reach it (never a sum
// that wraps around, as Within).
func Left(limit Micros, amounts ...Micros) Micros {
	for _, a := range amounts {
		if a >= limit {
			return 0
		}
		limit -= a
	}
	return limit
}

// ParseUSD reads a decimal dollar amount such as "12", "0.6" or "1e-3" exactly to the micro-dollar.
// More than six decimals, negative amounts and non-numbers are errors.
func ParseUSD(s string) (Micros, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty amount")
	}
	if strings.ContainsAny(s, "eE") { // YAML and JSON allow exponents; resolve them through the rational form
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q is negative", s)
	}
	s = strings.TrimPrefix(s, "+")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	if len(frac) > 6 {
		if strings.TrimRight(frac[6:], "0") != "" {
			return 0, fmt.Errorf("%q has more than 6 decimals", s)
		}
		frac = frac[:6]
	}
	frac += strings.Repeat("0", 6-len(frac))
	w, err := strconv.ParseUint(whole, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	f, err := strconv.ParseUint(frac, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if w > uint64(math.MaxInt64/int64(MicrosPerUSD))-1 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return Micros(w)*MicrosPerUSD + Micros(f), nil
}

// Decimal renders the amount in dollars with no trailing zeros ("0.0015", "12", "-3.5"): a valid JSON number.
func (m Micros) Decimal() string {
	neg := m < 0
	u := uint64(m)
	if neg {
		u = uint64(-m)
	}
	whole, frac := u/uint64(MicrosPerUSD), u%uint64(MicrosPerUSD)
	s := strconv.FormatUint(whole, 10)
	if frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MulDiv returns m*num/den rounded half away from zero. It is exact for any sizes a gateway sees: in int64
// arithmetic when m*num fits, as every price of a call does, and in big integers otherwise.
func (m Micros) MulDiv(num, den int64) Micros {
	if den == 0 {
		return 0
	}
	if q, ok := mulDivSmall(int64(m), num, den); ok {
		return Micros(q)
	}
	return m.mulDivBig(num, den)
}

// mulDivSmall is MulDiv on the magnitudes, when m*num fits in an int64: it reports false otherwise.
func mulDivSmall(m, num, den int64) (int64, bool) {
	if m == math.MinInt64 || num == math.MinInt64 || den == math.MinInt64 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(abs(m)), uint64(abs(num)))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	p, d := int64(lo), abs(den)
	q, r := p/d, p%d
	if r >= d-r && r != 0 { // half or more of the divisor: away from zero
		q++
	}
	if (m < 0) != (num < 0) != (den < 0) {
		q = -q
	}
	return q, true
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// mulDivBig is MulDiv in big integers, for products past int64.
func (m Micros) mulDivBig(num, den int64) Micros {
	p := new(big.Int).Mul(big.NewInt(int64(m)), big.NewInt(num))
	d := big.NewInt(den)
	q, r := new(big.Int).QuoRem(p, d, new(big.Int))
	if r.Sign() != 0 && new(big.Int).Abs(new(big.Int).Lsh(r, 1)).Cmp(new(big.Int).Abs(d)) >= 0 {
		if (p.Sign() < 0) != (d.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return Micros(q.Int64())
}
