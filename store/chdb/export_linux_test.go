package chdb

// FileRSS is fileRSS for the package's external tests.
var FileRSS = fileRSS

// WaitCodeRelease waits for a release of the engine's code that s's inserts
// started (Config.ReleaseCodeEvery).
func WaitCodeRelease(s *Store) {
	if s.code != nil {
		s.code.wait()
	}
}
