package domain

// MulDivBig is MulDiv's big-integer path, which the tests hold the int64 path to.
func MulDivBig(m Micros, num, den int64) Micros { return m.mulDivBig(num, den) }
