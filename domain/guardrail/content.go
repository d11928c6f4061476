package guardrail

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
)

type Action string

const (
	Block  Action = "block"
	Redact Action = "redact"
	Flag   Action = "flag"
)

func (a Action) valid() bool { return a == Block || a == Redact || a == Flag }

// MaxPattern caps a custom filter's regular expression, in characters.
const MaxPattern = 1000

// MaxProgram caps the instructions of a custom filter's compiled program. Go's RE2 engine runs in time linear in the
// text, but by a factor of up to the program's size: a scan costs a step per instruction per byte at worst. The
// characters alone do not bound it, since counted repetitions multiply: "[a-z]{1000}" written 90 times in 990
// characters compiles to 90,000 instructions, and scanned a 220 KB prompt for a minute. A pattern written out
// without counted repetitions (about an instruction a character) fits, and a repetition of up to about 1,000.
const MaxProgram = 2000

// ContentFilter is a custom regular expression with its action.
type ContentFilter struct {
	Pattern string
	Action  Action
	Label   *string
}

func (f ContentFilter) validate(i int) error {
	field := fmt.Sprintf("content_filters[%d]", i)
	if f.Pattern == "" || len(f.Pattern) > MaxPattern {
		return domain.Invalid(field+".pattern", fmt.Sprintf("must be 1 to %d characters", MaxPattern))
	}
	n, err := programSize(f.Pattern)
	if err != nil {
		return domain.Invalid(field+".pattern", "is not a valid regular expression: "+err.Error())
	}
	if n > MaxProgram {
		return domain.Invalid(field+".pattern", fmt.Sprintf("compiles to %d instructions, more than %d (scanning a "+
			"text costs up to a step per instruction per byte): use smaller repetition counts", n, MaxProgram))
	}
	if !f.Action.valid() {
		return domain.Invalid(field+".action", "must be block, redact or flag")
	}
	if f.Label != nil {
		return domain.CheckLength(field+".label", *f.Label, 100)
	}
	return nil
}

// programSize compiles a pattern as regexp.Compile does, and counts its program's instructions.
func programSize(pattern string) (int, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	return len(prog.Inst), nil
}

func (f ContentFilter) label() string {
	if f.Label != nil && *f.Label != "" {
		return *f.Label
	}
	return "[FILTERED]"
}

// Builtin is one of the gateway's own detectors.
type Builtin struct {
	Slug      string
	Action    Action
	ScanScope *string
}

func (b Builtin) validate(i int) error {
	field := fmt.Sprintf("content_filter_builtins[%d]", i)
	if _, ok := detectors[b.Slug]; !ok {
		return domain.Invalid(field+".slug", "must be one of "+strings.Join(BuiltinSlugs(), ", "))
	}
	if !b.Action.valid() {
		return domain.Invalid(field+".action", "must be block, redact or flag")
	}
	if b.ScanScope != nil && *b.ScanScope != "user_only" && *b.ScanScope != "all_messages" {
		return domain.Invalid(field+".scan_scope", "must be user_only or all_messages")
	}
	return nil
}

// Label is the system-assigned replacement text of a builtin, e.g. [EMAIL].
func (b Builtin) Label() string { return detectors[b.Slug].label }

type detector struct {
	label string
	re    *regexp.Regexp
	valid func(match string) bool // optional second check (Luhn for card numbers)
}

var detectors = map[string]detector{
	"email":       {label: "[EMAIL]", re: regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)},
	"phone":       {label: "[PHONE]", re: regexp.MustCompile(`(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\b\d{2,4})[\s.-]\d{3,4}[\s.-]?\d{3,4}\b`)},
	"ssn":         {label: "[SSN]", re: regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`)},
	"credit-card": {label: "[CREDIT_CARD]", re: regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`), valid: luhn},
	"ip-address": {label: "[IP_ADDRESS]", re: regexp.MustCompile(
		`\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b|\b(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b`)},
	"secrets": {label: "[SECRET]", re: regexp.MustCompile(
		`\b(?:sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})\b|-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
	"regex-prompt-injection": {label: "[PROMPT_INJECTION]", re: regexp.MustCompile(
		`(?i)\b(?:ignore|disregard|forget) (?:all |any )?(?:the )?(?:previous|prior|above|earlier) (?:instructions|prompts|rules)\b|\byou are now in developer mode\b`)},
}

// BuiltinSlugs lists the builtin detectors, sorted.
func BuiltinSlugs() []string {
	return []string{"credit-card", "email", "ip-address", "phone", "regex-prompt-injection", "secrets", "ssn"}
}

func luhn(s string) bool {
	sum, double, n := 0, false, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
		n++
	}
	return n >= 13 && sum%10 == 0
}

// Scan is the outcome of applying guardrails' content filters to the texts of a call.
type Scan struct {
	Texts []string // the texts to send upstream, redactions applied
	// Fixed is how many of Texts, the last, go upstream as they came (the text a part passed on as it came carries):
	// a redacting filter that matches one refuses the call, as it cannot redact it.
	Fixed int
	Flags []string // names of the filters that matched with action flag
}

// rule is one compiled filter.
type rule struct {
	name   string
	action Action
	label  string
	re     *regexp.Regexp
	valid  func(string) bool
}

// Policy is a guardrail's content filters, compiled once.
type Policy struct {
	g     Guardrail
	rules []rule
}

// Policy compiles the guardrail's filters (validated when the guardrail was written).
func (g Guardrail) Policy() Policy {
	p := Policy{g: g}
	for i, f := range g.ContentFilters {
		name := fmt.Sprintf("content_filters[%d]", i)
		if f.Label != nil && *f.Label != "" {
			name = *f.Label
		}
		p.rules = append(p.rules, rule{name: name, action: f.Action, label: f.label(), re: regexp.MustCompile(f.Pattern)})
	}
	for _, b := range g.Builtins {
		d := detectors[b.Slug]
		p.rules = append(p.rules, rule{name: b.Slug, action: b.Action, label: d.label, re: d.re, valid: d.valid})
	}
	return p
}

// Apply checks every text: a blocking match refuses the call (naming the filter and the guardrail), redactions
// replace the matches with their label, and flags are reported, once a filter.
func (p Policy) Apply(s Scan) (Scan, error) {
	s.Texts = slices.Clone(s.Texts)
	for _, r := range p.rules {
		flagged := false
		for i, text := range s.Texts {
			matches := r.find(text)
			if len(matches) == 0 {
				continue
			}
			switch r.action {
			case Block:
				return s, p.g.refusal(ErrBlocked, fmt.Sprintf("the input matches content filter %q", r.name)).With("filter", r.name)
			case Redact:
				if i >= len(s.Texts)-s.Fixed {
					return s, p.g.refusal(ErrBlocked, fmt.Sprintf("the input matches content filter %q, which redacts, "+
						"in a part the gateway passes on as it came and cannot redact", r.name)).With("filter", r.name)
				}
				s.Texts[i] = replace(text, matches, r.label)
			case Flag:
				if !flagged {
					s.Flags, flagged = append(s.Flags, r.name), true
				}
			}
		}
	}
	return s, nil
}

func (r rule) find(text string) [][]int {
	all := r.re.FindAllStringIndex(text, -1)
	if r.valid == nil {
		return all
	}
	out := all[:0]
	for _, m := range all {
		if r.valid(text[m[0]:m[1]]) {
			out = append(out, m)
		}
	}
	return out
}

func replace(text string, matches [][]int, label string) string {
	var b strings.Builder
	last := 0
	for _, m := range matches {
		b.WriteString(text[last:m[0]])
		b.WriteString(label)
		last = m[1]
	}
	b.WriteString(text[last:])
	return b.String()
}
