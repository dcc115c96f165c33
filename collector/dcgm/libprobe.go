//go:build cgo

package dcgm

/*
#cgo linux LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static const char *probe_lib(const char *name) {
	void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		return e != NULL ? e : "dlopen failed";
	}
	dlclose(h);
	return NULL;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// libraryName is the DCGM client library go-dcgm dlopens.
const libraryName = "libdcgm.so.4"

// probeLibrary reports ErrNoLibrary when libraryName cannot be loaded. go-dcgm's
// Init would say so only in its error text; checking first gives callers a
// sentinel to test with errors.Is.
func probeLibrary() error {
	name := C.CString(libraryName)
	defer C.free(unsafe.Pointer(name))
	if msg := C.probe_lib(name); msg != nil {
		return fmt.Errorf("dcgm: %w (dlopen: %s)", ErrNoLibrary, C.GoString(msg))
	}
	return nil
}
