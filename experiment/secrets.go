package experiment

import (
	"regexp"
	"strings"
)

// Results never hold a password: the command line and the copy of the scenario file are
// redacted before they are written, and results are written without permissions for
// others (directories 0750, files 0640), since a run's manifest names servers and users.

// Redacted replaces a secret.
const Redacted = "***"

// secretFlags are the flags whose value is a password.
var secretFlags = []string{"--mysql-password", "--password"}

// dsnPassword matches the password of a go-sql-driver DSN (user:password@tcp(...) or
// @unix(...) or @/): group 1 is the user part, group 2 what follows the password.
var dsnPassword = regexp.MustCompile(`([A-Za-z0-9_.%$-]*):[^@\s'"]*(@(?:tcp|tcp6|unix)?\(|@/)`)

// passwordKey matches a YAML "password: value" entry (a key ending in password).
var passwordKey = regexp.MustCompile(`(?m)^(\s*(?:-\s*)?[A-Za-z_]*password\s*:\s*)(\S.*?)\s*$`)

// passwordInline matches "password: value" inside a YAML flow mapping.
var passwordInline = regexp.MustCompile(`([{,]\s*[A-Za-z_]*password\s*:\s*)([^,}\s]+)`)

// RedactArgs returns a copy of a command line with passwords replaced: the values of
// --mysql-password and --password (as the next argument or after "="), and the password
// of any DSN in an argument.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	next := false
	for i, a := range args {
		switch {
		case next:
			out[i], next = Redacted, false
			continue
		}
		out[i] = RedactText(a)
		for _, f := range secretFlags {
			if a == f {
				next = true
			} else if strings.HasPrefix(a, f+"=") {
				out[i] = f + "=" + Redacted
			}
		}
	}
	return out
}

// RedactText replaces the passwords of DSNs and of YAML password entries in s.
func RedactText(s string) string {
	s = dsnPassword.ReplaceAllString(s, "${1}:"+Redacted+"${2}")
	s = passwordKey.ReplaceAllString(s, `${1}"`+Redacted+`"`)
	return passwordInline.ReplaceAllString(s, `${1}"`+Redacted+`"`)
}
