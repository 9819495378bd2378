package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// ParseSpecYAML decodes one topology Spec from YAML, strictly: unknown keys are errors
// that name the line ("line 4: field nodez not found"), and so does a byte that is not
// text (CheckText). Durations are Go strings ("10s").
// The result is defaulted but not validated.
func ParseSpecYAML(b []byte) (Spec, error) {
	var s Spec
	if err := CheckText(b); err != nil {
		return s, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return s, fmt.Errorf("empty topology file")
		}
		return s, fmt.Errorf("%s", YAMLError(err))
	}
	s.Defaults()
	return s, nil
}
