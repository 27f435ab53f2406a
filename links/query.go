package links

import "strings"

// StripQuery removes the query of a normalised URL (see Normalize; the
// fragment is already gone), for VERDICTBOT_URL_QUERY=strip: magic links,
// reset tokens and session ids in the query stay inside the workspace.
// dropped reports whether a non-empty query was removed. A normalised
// URL's first "?" starts its query: the host cannot hold one and the path
// has it percent-encoded.
func StripQuery(normalised string) (stripped string, dropped bool) {
	i := strings.IndexByte(normalised, '?')
	if i < 0 {
		return normalised, false
	}
	return normalised[:i], i+1 < len(normalised)
}
