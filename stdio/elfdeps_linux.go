package stdio

import (
	"bufio"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// programFiles are the files the kernel and the dynamic loader open to
// run the program at path: the program itself, then for an ELF program
// its loader and the shared libraries it needs (and they need), found as
// the loader finds them; for a #! script its interpreter (with `env
// NAME`, NAME found in the PATH of env) and that interpreter's own files.
// Each path is resolved to the file it names, which is what a Landlock
// rule holds on to. Libraries a program opens itself (dlopen: NSS, a
// plugin) are not in its headers: a preset or --sandbox-read gives them.
func programFiles(path string, env []string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(p string, depth int)
	visit = func(p string, depth int) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] || depth > 4 {
			return
		}
		seen[real] = true
		out = append(out, real)
		if interp, arg := shebang(real); interp != "" {
			visit(interp, depth+1)
			if filepath.Base(interp) == "env" && arg != "" {
				if found, err := LookPath(arg, "", env); err == nil {
					visit(found, depth+1)
				}
			}
			return
		}
		for _, lib := range elfLibraries(real, env) {
			if !seen[lib] {
				seen[lib] = true
				out = append(out, lib)
			}
		}
	}
	visit(path, 0)
	return out
}

// shebang is the interpreter of a #! script and its first argument; ""
// for any other file.
func shebang(path string) (interp, arg string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if err != nil && err != io.EOF || !strings.HasPrefix(line, "#!") {
		return "", ""
	}
	fields := strings.Fields(line[2:])
	if len(fields) == 0 {
		return "", ""
	}
	if len(fields) > 1 {
		arg = fields[1]
	}
	return fields[0], arg
}

// elfLibraries are the loader and the shared libraries of the ELF file
// at path, transitively, resolved; none for a static one or a file that
// is not ELF.
func elfLibraries(path string, env []string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
			if err == nil {
				if real, err := filepath.EvalSymlinks(strings.TrimRight(string(b), "\x00")); err == nil {
					out = append(out, real)
				}
			}
		}
	}
	dirs := librarySearchPath(env)
	seen := map[string]bool{}
	queue := []*elf.File{f}
	var opened []*elf.File
	defer func() {
		for _, g := range opened {
			g.Close()
		}
	}()
	for len(queue) > 0 && len(seen) < 512 {
		g := queue[0]
		queue = queue[1:]
		needed, _ := g.DynString(elf.DT_NEEDED)
		own := ownSearchPath(g, path)
		for _, name := range needed {
			if seen[name] {
				continue
			}
			seen[name] = true
			lib := findLibrary(name, f, append(own, dirs...))
			if lib == "" {
				continue
			}
			out = append(out, lib)
			if h, err := elf.Open(lib); err == nil {
				opened = append(opened, h)
				queue = append(queue, h)
			}
		}
	}
	return out
}

// ownSearchPath is a file's DT_RPATH and DT_RUNPATH, with $ORIGIN as the
// directory of path (the program's; close enough for its libraries).
func ownSearchPath(f *elf.File, path string) []string {
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range filepath.SplitList(v) {
				d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", filepath.Dir(path))
				if filepath.IsAbs(d) {
					dirs = append(dirs, d)
				}
			}
		}
	}
	return dirs
}

// librarySearchPath is where the loader looks after a file's own path:
// LD_LIBRARY_PATH (the child's), the directories of /etc/ld.so.conf,
// then the defaults.
func librarySearchPath(env []string) []string {
	var dirs []string
	if v, ok := lookupEnv(env, "LD_LIBRARY_PATH"); ok {
		for _, d := range filepath.SplitList(v) {
			if filepath.IsAbs(d) {
				dirs = append(dirs, d)
			}
		}
	}
	dirs = append(dirs, ldSoConf("/etc/ld.so.conf", 0)...)
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu", "arm": "arm-linux-gnueabihf"}[runtime.GOARCH]
	for _, d := range []string{"/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		if triplet != "" {
			dirs = append(dirs, filepath.Join(d, triplet))
		}
		dirs = append(dirs, d)
	}
	return slices.Compact(dirs)
}

// ldSoConf reads the directories of an ld.so.conf and the files it
// includes.
func ldSoConf(file string, depth int) []string {
	f, err := os.Open(file)
	if err != nil || depth > 4 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if pat, ok := strings.CutPrefix(line, "include"); ok && (pat == "" || pat[0] == ' ' || pat[0] == '\t') {
			pat = strings.TrimSpace(pat)
			if !filepath.IsAbs(pat) {
				pat = filepath.Join(filepath.Dir(file), pat)
			}
			matches, _ := filepath.Glob(pat)
			for _, m := range matches {
				dirs = append(dirs, ldSoConf(m, depth+1)...)
			}
			continue
		}
		if filepath.IsAbs(line) {
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// findLibrary is the first file called name in dirs that is an ELF
// object of the program's class and machine, resolved; "" if none.
func findLibrary(name string, prog *elf.File, dirs []string) string {
	if strings.Contains(name, "/") {
		if real, err := filepath.EvalSymlinks(name); err == nil {
			return real
		}
		return ""
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		g, err := elf.Open(p)
		if err != nil {
			continue
		}
		ok := g.Class == prog.Class && g.Machine == prog.Machine
		g.Close()
		if ok {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
		}
	}
	return ""
}
