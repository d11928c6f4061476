package wire

import (
	"iter"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Every scalar setting section.key has an environment override SWITCHBOARD_SECTION_KEY (upper case), which wins
// over the file: log.level is SWITCHBOARD_LOG_LEVEL, server.addr SWITCHBOARD_SERVER_ADDR. The values are read as
// the file's are (durations like 30s, numbers, true/false). Lists (providers, models) have none.

// envAliases are older names kept working; the canonical name wins when both are set.
var envAliases = map[string]string{
	"server.addr":  "SWITCHBOARD_ADDR",
	"database.url": "DATABASE_URL",
	"redis.url":    "REDIS_URL",
}

// EnvOverride is one setting and the variable that overrides it.
type EnvOverride struct {
	Setting, Env, Alias string
}

// EnvOverrides lists every override, in the file's order.
func EnvOverrides() []EnvOverride {
	var out []EnvOverride
	eachScalar(reflect.ValueOf(&fileConfig{}).Elem(), func(setting string, _ reflect.Value) {
		out = append(out, EnvOverride{Setting: setting, Env: envName(setting), Alias: envAliases[setting]})
	})
	return out
}

// UnknownEnv is the SWITCHBOARD_* variables among names (the environment's) that nothing reads, sorted: a typo
// (SWITCHBOARD_SERVER_ADRR) would otherwise leave its setting at the default without a word, where the file
// refuses an unknown setting.
func UnknownEnv(names iter.Seq[string]) []string {
	known := map[string]bool{"SWITCHBOARD_CONFIG": true, "SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY": true}
	for _, o := range EnvOverrides() {
		known[o.Env], known[o.Alias] = true, true
	}
	var out []string
	for name := range names {
		if strings.HasPrefix(name, "SWITCHBOARD_") && !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func envName(setting string) string {
	return "SWITCHBOARD_" + strings.ToUpper(strings.ReplaceAll(setting, ".", "_"))
}

// eachScalar calls f with every scalar setting of a section struct (section.key) and the field holding it.
func eachScalar(v reflect.Value, f func(setting string, field reflect.Value)) {
	for i := range v.NumField() {
		section, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		sv := v.Field(i)
		if sv.Kind() != reflect.Struct {
			continue // the lists
		}
		for j := range sv.NumField() {
			key, _, _ := strings.Cut(sv.Type().Field(j).Tag.Get("yaml"), ",")
			f(section+"."+key, sv.Field(j))
		}
	}
}

// applyEnv writes the overrides that are set into f, naming the variable of a value that does not parse.
func applyEnv(f *fileConfig, getenv func(string) string) error {
	var bad *ConfigError
	eachScalar(reflect.ValueOf(f).Elem(), func(setting string, field reflect.Value) {
		for _, name := range []string{envAliases[setting], envName(setting)} {
			v := getenv(name)
			if name == "" || v == "" || bad != nil {
				continue
			}
			n := &yaml.Node{Kind: yaml.ScalarNode, Value: v}
			if err := n.Decode(field.Addr().Interface()); err != nil {
				bad = &ConfigError{Field: name, Msg: wants(field.Type(), err)}
			}
		}
	})
	if bad != nil {
		return bad
	}
	return nil
}
