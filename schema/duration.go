package schema

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/habench/habench/topology"
)

// Duration is a duration written as text: Go's duration text in JSON ("10s", "1m30s"),
// and in a scenario's YAML also a bare number of seconds. It is the one duration type of
// scenario files and of the results files written from them (sweep.json).
type Duration time.Duration

// UnmarshalYAML reads "10s" or 10 (seconds). A negative or malformed value is a
// *topology.FieldError (field "duration") after "line N: ".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f >= 0 {
			*d = Duration(time.Duration(f * float64(time.Second)))
			return nil
		}
		if v, err := time.ParseDuration(n.Value); err == nil && v >= 0 {
			*d = Duration(v)
			return nil
		}
	}
	fe := &topology.FieldError{Field: "duration", Value: n.Value, Reason: "want a duration like 10s or a number of seconds"}
	if n.Line <= 0 {
		return fe
	}
	return fmt.Errorf("line %d: %w", n.Line, fe)
}

// MarshalText writes "10s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads what MarshalText writes.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
