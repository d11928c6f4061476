package account

import "time"

// TokenLimits are how many tokens (prompt and completion, as the upstreams count them) a key's calls may use a
// minute and a day; 0 is no limit of the key's own.
type TokenLimits struct{ PerMinute, PerDay int64 }

// Or is l, each limit it leaves at 0 the default's.
func (l TokenLimits) Or(def TokenLimits) TokenLimits {
	if l.PerMinute == 0 {
		l.PerMinute = def.PerMinute
	}
	if l.PerDay == 0 {
		l.PerDay = def.PerDay
	}
	return l
}

// Zero reports no limit.
func (l TokenLimits) Zero() bool { return l.PerMinute == 0 && l.PerDay == 0 }

// MaxTokens bounds a token limit: a billion, a minute's tokens 60 ns apart, where the limiters' arithmetic stays
// exact enough.
const MaxTokens = 1_000_000_000

// TokenWindow is one of a key's token limits: Limit tokens each Period.
type TokenWindow struct {
	Name   string // "minute", "day": the limit's name in messages
	Limit  int64
	Period time.Duration
}

// Windows are the limits that are set, a minute's first.
func (l TokenLimits) Windows() []TokenWindow {
	var out []TokenWindow
	if l.PerMinute > 0 {
		out = append(out, TokenWindow{"minute", l.PerMinute, time.Minute})
	}
	if l.PerDay > 0 {
		out = append(out, TokenWindow{"day", l.PerDay, 24 * time.Hour})
	}
	return out
}

// Interval is the time each token of the window stands for: the window regains one token each Interval.
func (w TokenWindow) Interval() time.Duration { return w.Period / time.Duration(w.Limit) }

// TokenState is a window's state as a generic cell rate algorithm keeps it, with debt: Ahead is how far the
// window's "theoretical arrival time" is ahead of now (at most 0: full). Tokens used move it ahead by an Interval each, time brings
// it back; a window is full at 0 and empty at Period, and a call that used more than was left puts it past Period
// (a debt), so that the tokens every call used count, however many they were.
type TokenState struct {
	Window TokenWindow
	Ahead  time.Duration
}

// Allowed reports whether a call may start: the window has at least one token left.
func (s TokenState) Allowed() bool { return s.Remaining() >= 1 }

// Remaining are the tokens left.
func (s TokenState) Remaining() int64 {
	return max(int64((s.Window.Period-max(s.Ahead, 0))/s.Window.Interval()), 0)
}

// RetryAfter is how long until a call may start again: until the window has a token again.
func (s TokenState) RetryAfter() time.Duration {
	return max(s.Ahead-(s.Window.Period-s.Window.Interval()), 0)
}

// Reset is how long until the window is full again.
func (s TokenState) Reset() time.Duration { return max(s.Ahead, 0) }

// Spent is the state after n more tokens, at the same moment.
func (s TokenState) Spent(n int64) TokenState {
	s.Ahead = max(s.Ahead, 0) + time.Duration(n)*s.Window.Interval()
	return s
}
