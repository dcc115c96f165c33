//go:build !cgo

package nvml

// openLibrary fails without cgo: go-nvml calls NVML through cgo, so a binary built
// with CGO_ENABLED=0 cannot load libnvidia-ml.so.1 at all.
func openLibrary() (library, status) { return nil, errLibraryNotFound }

// builtWithoutCgo tells New to say why the library could not be loaded.
const builtWithoutCgo = true
