package account_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
)

var now = time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)

func TestSecret(t *testing.T) {
	t.Parallel()
	s1, h1, l1 := account.NewSecret()
	s2, _, _ := account.NewSecret()
	if s1 == s2 || len(s1) != len(account.KeyPrefix)+64 || h1 != account.HashSecret(s1) || len(h1) != 64 {
		t.Fatalf("NewSecret: %q %q %q", s1, h1, l1)
	}
	if strings.Contains(s1, l1) || !strings.HasPrefix(l1, s1[:12]) || !strings.HasSuffix(l1, s1[len(s1)-3:]) {
		t.Fatalf("label %q of %q", l1, s1)
	}
}

func TestKeyRemainingAndUsable(t *testing.T) {
	t.Parallel()
	limit := domain.Micros(10)
	u := account.Usage{Total: 100, Daily: 4, Weekly: 7, Monthly: 12}
	tests := []struct {
		reset domain.Interval
		want  domain.Micros
	}{{domain.IntervalDaily, 6}, {domain.IntervalWeekly, 3}, {domain.IntervalMonthly, 0}, {domain.IntervalNone, 0}}
	for _, tt := range tests {
		k := account.Key{Limit: &limit, LimitReset: tt.reset}
		if got := *k.Remaining(u); got != tt.want {
			t.Errorf("Remaining(%q) = %d, want %d", tt.reset, got, tt.want)
		}
	}
	if (account.Key{}).Remaining(u) != nil {
		t.Error("a key without a limit has a remainder")
	}
	past, future := now.Add(-time.Second), now.Add(time.Second)
	for _, tt := range []struct {
		k    account.Key
		want bool
	}{{account.Key{}, true}, {account.Key{Disabled: true}, false}, {account.Key{ExpiresAt: &past}, false}, {account.Key{ExpiresAt: &future}, true}} {
		if got := tt.k.Usable(now); got != tt.want {
			t.Errorf("Usable(%+v) = %v", tt.k, got)
		}
	}
}

func TestKeyChange(t *testing.T) {
	t.Parallel()
	limit, neg := domain.Micros(5), domain.Micros(-1)
	daily := domain.IntervalDaily
	name, blank := "new", " "
	tests := []struct {
		name    string
		change  account.KeyChange
		check   func(account.Key) bool
		wantErr string
	}{
		{"rename", account.KeyChange{Name: &name}, func(k account.Key) bool { return k.Name == "new" }, ""},
		{"blank name", account.KeyChange{Name: &blank}, nil, "name"},
		{"set limit", account.KeyChange{Limit: domain.Patch[domain.Micros]{Set: true, Value: &limit}}, func(k account.Key) bool { return *k.Limit == 5 }, ""},
		{"clear limit", account.KeyChange{Limit: domain.Patch[domain.Micros]{Set: true}}, func(k account.Key) bool { return k.Limit == nil }, ""},
		{"keep limit", account.KeyChange{}, func(k account.Key) bool { return *k.Limit == 9 }, ""},
		{"negative limit", account.KeyChange{Limit: domain.Patch[domain.Micros]{Set: true, Value: &neg}}, nil, "limit"},
		{"clear reset", account.KeyChange{LimitReset: domain.Patch[domain.Interval]{Set: true}}, func(k account.Key) bool { return k.LimitReset == "" }, ""},
		{"set reset", account.KeyChange{LimitReset: domain.Patch[domain.Interval]{Set: true, Value: &daily}}, func(k account.Key) bool { return k.LimitReset == daily }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nine := domain.Micros(9)
			k := account.Key{Name: "old", Limit: &nine, LimitReset: domain.IntervalWeekly}
			err := tt.change.Apply(&k, now)
			if tt.wantErr != "" {
				var de *domain.Error
				if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.wantErr {
					t.Fatalf("err = %v, want invalid %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(k) || k.UpdatedAt == nil || !k.UpdatedAt.Equal(now) {
				t.Fatalf("Apply: %+v, %v", k, err)
			}
		})
	}
}

func TestNewMember(t *testing.T) {
	t.Parallel()
	for _, email := range []string{"", "x", "@x", "x@", "a b@c"} {
		if _, err := account.NewMember("u", email, nil, nil, "", now); err == nil {
			t.Errorf("NewMember(%q) accepted", email)
		}
	}
	m, err := account.NewMember("u", " a@b.c ", nil, nil, "", now)
	if err != nil || m.Email != "a@b.c" || m.Role != account.RoleMember {
		t.Fatalf("NewMember = %+v, %v", m, err)
	}
}
