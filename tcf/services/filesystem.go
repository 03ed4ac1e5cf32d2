package services

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

// FileSystem is TCF's SFTP-like file access: handles for open files and
// directories, stat, and the usual path operations. Errors carry the
// service's own codes (EOF, no such file, permission denied).

// FileSystem error codes (service specific).
const (
	fsStatusEOF              = 0x10001
	fsStatusNoSuchFile       = 0x10002
	fsStatusPermissionDenied = 0x10003
)

// Open modes.
const (
	fsRead   = 0x01
	fsWrite  = 0x02
	fsAppend = 0x04
	fsCreat  = 0x08
	fsTrunc  = 0x10
	fsExcl   = 0x20
)

// maxFSRead bounds one read reply; maxFSHandles bounds the open handles of a
// channel, so a client cannot exhaust the agent.
const (
	maxFSRead    = 1 << 20
	maxFSHandles = 256
	readdirBatch = 64
)

// fsError is a FileSystem error with its service code.
type fsError struct {
	code int
	err  error
}

func (e *fsError) Error() string      { return e.err.Error() }
func (e *fsError) Unwrap() error      { return e.err }
func (e *fsError) TCFCode() int       { return e.code }
func (e *fsError) TCFService() string { return "FileSystem" }

// fsErr maps an OS error onto the service's codes.
func fsErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return &fsError{fsStatusNoSuchFile, err}
	case errors.Is(err, fs.ErrPermission):
		return &fsError{fsStatusPermissionDenied, err}
	}
	return &fsError{tcf.CodeOther, err}
}

// fsHandle is an open file or directory.
type fsHandle struct {
	file *os.File
	dir  bool
}

// fileSystem is the FileSystem service: the files and directories each
// channel opened, closed with the channel.
type fileSystem struct {
	mu      sync.Mutex
	next    int
	handles map[*tcf.Channel]map[string]*fsHandle
}

// RegisterFileSystem adds the FileSystem service.
func (a *Agent) RegisterFileSystem() {
	fsys := &fileSystem{handles: map[*tcf.Channel]map[string]*fsHandle{}}
	svc := a.srv.Service("FileSystem")
	svc.Command("open", fsys.open)
	svc.Command("close", fsys.close)
	svc.Command("read", fsys.read)
	svc.Command("write", fsys.write)
	queryByID(svc, "stat", statQuery(os.Stat))
	queryByID(svc, "lstat", statQuery(os.Lstat))
	svc.Command("fstat", fsys.fstat)
	svc.Command("setstat", setstat)
	svc.Command("fsetstat", fsys.fsetstat)
	svc.Command("opendir", fsys.opendir)
	svc.Command("readdir", fsys.readdir)
	svc.Command("roots", roots)
	svc.Command("remove", pathOp(os.Remove))
	svc.Command("rmdir", pathOp(func(p string) error { return syscall.Rmdir(p) }))
	svc.Command("mkdir", mkdir)
	queryByID(svc, "realpath", pathQuery(realpath))
	queryByID(svc, "readlink", pathQuery(os.Readlink))
	svc.Command("rename", twoPaths(os.Rename))
	svc.Command("symlink", twoPaths(func(link, target string) error { return os.Symlink(target, link) }))
	svc.Command("copy", copyCmd)
	svc.Command("user", userCmd)
}

// open opens a file: path, pflags (fsRead...), attrs (Permissions of a new
// file); the reply is error, handle.
func (fsys *fileSystem) open(c *tcf.Call) {
	args := c.Args()
	path, mode := args.String(), args.Int()
	attrs := args.Props()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	perm := os.FileMode(0o666)
	if p, ok := attrs.Uint64("Permissions"); ok {
		perm = os.FileMode(p & 0o7777)
	}
	f, err := os.OpenFile(resolveHome(path), openFlags(mode), perm)
	if err != nil {
		c.Reply().Error(fsErr(err)).Null().Send()
		return
	}
	id, err := fsys.addHandle(c.Channel(), &fsHandle{file: f})
	if err != nil {
		f.Close()
	}
	c.Reply().Error(err).Data(nullable(id)).Send()
}

// openFlags maps the protocol's open modes onto os.OpenFile's flags.
func openFlags(mode int) int {
	flags := 0
	switch {
	case mode&fsRead != 0 && mode&fsWrite != 0:
		flags = os.O_RDWR
	case mode&fsWrite != 0:
		flags = os.O_WRONLY
	}
	for bit, f := range map[int]int{fsAppend: os.O_APPEND, fsCreat: os.O_CREATE, fsTrunc: os.O_TRUNC, fsExcl: os.O_EXCL} {
		if mode&bit != 0 {
			flags |= f
		}
	}
	return flags
}

func (fsys *fileSystem) close(c *tcf.Call) {
	h, id, err := fsys.handleArg(c)
	if err == nil {
		err = fsErr(h.file.Close())
		fsys.dropHandle(c.Channel(), id)
	}
	c.ReplyError(err)
}

// read reads at most maxFSRead bytes at an offset: data, error, eof.
func (fsys *fileSystem) read(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	off, size := args.Int64(), args.Int()
	if err := args.End(); err != nil {
		c.Reply().Null().Error(err).Bool(false).Send()
		return
	}
	h, err := fsys.handle(c.Channel(), id)
	if err != nil {
		c.Reply().Null().Error(err).Bool(false).Send()
		return
	}
	if size < 0 || size > maxFSRead {
		size = maxFSRead
	}
	buf := make([]byte, size)
	n, err := h.file.ReadAt(buf, off)
	eof := errors.Is(err, io.EOF)
	if eof {
		err = nil
	}
	c.Reply().Binary(buf[:n]).Error(fsErr(err)).Bool(eof && n < size).Send()
}

func (fsys *fileSystem) write(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	off := args.Int64()
	data := args.Binary()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	h, err := fsys.handle(c.Channel(), id)
	if err == nil {
		_, err = h.file.WriteAt(data, off)
		err = fsErr(err)
	}
	c.ReplyError(err)
}

// statQuery makes stat or lstat into a query of a path's attributes.
func statQuery(stat func(string) (os.FileInfo, error)) func(string) (any, error) {
	return func(path string) (any, error) {
		fi, err := stat(resolveHome(path))
		if err != nil {
			return nil, fsErr(err)
		}
		return fileAttrs(fi), nil
	}
}

func (fsys *fileSystem) fstat(c *tcf.Call) {
	h, _, err := fsys.handleArg(c)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	fi, err := h.file.Stat()
	if err != nil {
		c.Reply().Error(fsErr(err)).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(fileAttrs(fi)).Send()
}

func setstat(c *tcf.Call) {
	args := c.Args()
	path := args.String()
	attrs := args.Props()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	c.ReplyError(setAttrs(resolveHome(path), attrs))
}

func (fsys *fileSystem) fsetstat(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	attrs := args.Props()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	h, err := fsys.handle(c.Channel(), id)
	if err == nil {
		err = setAttrs(h.file.Name(), attrs)
	}
	c.ReplyError(err)
}

func (fsys *fileSystem) opendir(c *tcf.Call) {
	args := c.Args()
	path := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	f, err := openDir(path)
	if err != nil {
		c.Reply().Error(fsErr(err)).Null().Send()
		return
	}
	id, err := fsys.addHandle(c.Channel(), &fsHandle{file: f, dir: true})
	if err != nil {
		f.Close()
	}
	c.Reply().Error(err).Data(nullable(id)).Send()
}

// openDir opens path, which must be a directory.
func openDir(path string) (*os.File, error) {
	f, err := os.Open(resolveHome(path))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.IsDir() {
		err = &fsError{tcf.CodeOther, fmt.Errorf("%s is not a directory", path)}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readdir reads the next readdirBatch entries of a directory handle:
// entries, error, eof.
func (fsys *fileSystem) readdir(c *tcf.Call) {
	h, _, err := fsys.handleArg(c)
	if err != nil || !h.dir {
		if err == nil {
			err = &fsError{tcf.CodeOther, errors.New("not a directory handle")}
		}
		c.Reply().Null().Error(err).Bool(false).Send()
		return
	}
	entries, rerr := h.file.ReadDir(readdirBatch)
	eof := errors.Is(rerr, io.EOF) || len(entries) < readdirBatch
	if errors.Is(rerr, io.EOF) {
		rerr = nil
	}
	out := []fsDirEntry{}
	for _, e := range entries {
		ent := fsDirEntry{FileName: e.Name()}
		if fi, err := os.Lstat(filepath.Join(h.file.Name(), e.Name())); err == nil {
			ent.Attrs = fileAttrs(fi)
			ent.LongName = fmt.Sprintf("%s %8d %s %s", fi.Mode(), fi.Size(), fi.ModTime().Format("Jan _2 15:04"), e.Name())
		}
		out = append(out, ent)
	}
	c.Reply().Data(out).Error(fsErr(rerr)).Bool(eof).Send()
}

func roots(c *tcf.Call) {
	if err := c.Args().End(); err != nil {
		c.Reply().Null().Error(err).Send()
		return
	}
	ent := fsDirEntry{FileName: "/"}
	if fi, err := os.Stat("/"); err == nil {
		ent.Attrs = fileAttrs(fi)
	}
	c.Reply().Data([]fsDirEntry{ent}).Error(nil).Send()
}

// pathOp makes a command of an operation on one path.
func pathOp(op func(string) error) func(c *tcf.Call) {
	return func(c *tcf.Call) {
		args := c.Args()
		path := args.String()
		if err := args.End(); err != nil {
			c.ReplyError(err)
			return
		}
		c.ReplyError(fsErr(op(resolveHome(path))))
	}
}

func mkdir(c *tcf.Call) {
	args := c.Args()
	path := args.String()
	attrs := args.Props()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	perm := os.FileMode(0o777)
	if p, ok := attrs.Uint64("Permissions"); ok {
		perm = os.FileMode(p & 0o7777)
	}
	c.ReplyError(fsErr(os.Mkdir(resolveHome(path), perm)))
}

// pathQuery makes a query of a path into a path.
func pathQuery(op func(string) (string, error)) func(string) (any, error) {
	return func(path string) (any, error) {
		out, err := op(resolveHome(path))
		if err != nil {
			return nil, fsErr(err)
		}
		return out, nil
	}
}

// realpath is the absolute path of p with its symbolic links resolved, or
// only absolute when they cannot be.
func realpath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	return abs, nil
}

// twoPaths makes a command of an operation on two paths.
func twoPaths(op func(a, b string) error) func(c *tcf.Call) {
	return func(c *tcf.Call) {
		args := c.Args()
		p1, p2 := args.String(), args.String()
		if err := args.End(); err != nil {
			c.ReplyError(err)
			return
		}
		c.ReplyError(fsErr(op(resolveHome(p1), resolveHome(p2))))
	}
}

func copyCmd(c *tcf.Call) {
	args := c.Args()
	src, dst := args.String(), args.String()
	perms, owner := args.Bool(), args.Bool()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	c.ReplyError(fsErr(copyFile(resolveHome(src), resolveHome(dst), perms, owner)))
}

func userCmd(c *tcf.Call) {
	if err := c.Args().End(); err != nil {
		c.ReplyError(err)
		return
	}
	home, _ := os.UserHomeDir()
	c.Reply().Int64(int64(os.Getuid())).Int64(int64(os.Geteuid())).Int64(int64(os.Getgid())).
		Int64(int64(os.Getegid())).String(home).Send()
}

func nullable(id string) any {
	if id == "" {
		return nil
	}
	return id
}

// resolveHome makes relative paths relative to the user's home directory, as
// the protocol says.
func resolveHome(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	return filepath.Join(home, p)
}

// fsAttrs are a file's FileSystem attributes. Fields are in the order of
// their names, as a map of them was written; the owner and access time are
// there when the OS says them.
type fsAttrs struct {
	ATime       *uint64 `json:"ATime,omitempty"`
	GID         *uint64 `json:"GID,omitempty"`
	MTime       uint64  `json:"MTime"`
	Permissions uint64  `json:"Permissions"`
	Size        uint64  `json:"Size"`
	UID         *uint64 `json:"UID,omitempty"`
}

func fileAttrs(fi os.FileInfo) *fsAttrs {
	a := &fsAttrs{
		Size:        uint64(fi.Size()),
		Permissions: uint64(unixMode(fi.Mode())),
		MTime:       uint64(fi.ModTime().UnixMilli()),
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid, gid := uint64(st.Uid), uint64(st.Gid)
		atime := uint64(time.Unix(st.Atim.Sec, st.Atim.Nsec).UnixMilli())
		a.UID, a.GID, a.ATime = &uid, &gid, &atime
		a.Permissions = uint64(st.Mode)
	}
	return a
}

// fsDirEntry is one entry of readdir's (and roots') reply.
type fsDirEntry struct {
	Attrs    *fsAttrs `json:"Attrs,omitempty"`
	FileName string   `json:"FileName"`
	LongName string   `json:"LongName,omitempty"`
}

// unixMode converts a Go file mode to st_mode bits.
func unixMode(m os.FileMode) uint32 {
	mode := uint32(m.Perm())
	switch {
	case m.IsDir():
		mode |= syscall.S_IFDIR
	case m&os.ModeSymlink != 0:
		mode |= syscall.S_IFLNK
	case m&os.ModeNamedPipe != 0:
		mode |= syscall.S_IFIFO
	case m&os.ModeSocket != 0:
		mode |= syscall.S_IFSOCK
	case m&os.ModeDevice != 0 && m&os.ModeCharDevice != 0:
		mode |= syscall.S_IFCHR
	case m&os.ModeDevice != 0:
		mode |= syscall.S_IFBLK
	default:
		mode |= syscall.S_IFREG
	}
	return mode
}

func setAttrs(path string, attrs tcf.Props) error {
	if p, ok := attrs.Uint64("Permissions"); ok {
		if err := os.Chmod(path, os.FileMode(p&0o7777)); err != nil {
			return fsErr(err)
		}
	}
	uid, uok := attrs.Int64("UID")
	gid, gok := attrs.Int64("GID")
	if uok || gok {
		if !uok {
			uid = -1
		}
		if !gok {
			gid = -1
		}
		if err := os.Lchown(path, int(uid), int(gid)); err != nil {
			return fsErr(err)
		}
	}
	if size, ok := attrs.Int64("Size"); ok {
		if err := os.Truncate(path, size); err != nil {
			return fsErr(err)
		}
	}
	at, aok := attrs.Int64("ATime")
	mt, mok := attrs.Int64("MTime")
	if aok || mok {
		fi, err := os.Stat(path)
		if err != nil {
			return fsErr(err)
		}
		a, m := fi.ModTime(), fi.ModTime()
		if aok {
			a = time.UnixMilli(at)
		}
		if mok {
			m = time.UnixMilli(mt)
		}
		if err := os.Chtimes(path, a, m); err != nil {
			return fsErr(err)
		}
	}
	return nil
}

func copyFile(src, dst string, perms, owner bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if perms {
		if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	if owner {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return os.Chown(dst, int(st.Uid), int(st.Gid))
		}
	}
	return nil
}

// addHandle gives h an ID on ch; the channel's handles are closed with it.
func (fsys *fileSystem) addHandle(ch *tcf.Channel, h *fsHandle) (string, error) {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	m := fsys.handles[ch]
	if m == nil {
		m = map[string]*fsHandle{}
		fsys.handles[ch] = m
		ch.OnClose(func() { fsys.closeChannel(ch) })
	}
	if len(m) >= maxFSHandles {
		return "", &fsError{tcf.CodeOther, fmt.Errorf("too many open files on this channel (%d)", maxFSHandles)}
	}
	fsys.next++
	id := "FH" + strconv.Itoa(fsys.next)
	m[id] = h
	return id, nil
}

// closeChannel closes the files a closed channel left open.
func (fsys *fileSystem) closeChannel(ch *tcf.Channel) {
	fsys.mu.Lock()
	hs := fsys.handles[ch]
	delete(fsys.handles, ch)
	fsys.mu.Unlock()
	for _, h := range hs {
		h.file.Close()
	}
}

func (fsys *fileSystem) handle(ch *tcf.Channel, id string) (*fsHandle, error) {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if h := fsys.handles[ch][id]; h != nil {
		return h, nil
	}
	return nil, tcf.Errorf(tcf.CodeInvalidContext, "no open file handle %q", id)
}

// handleArg reads a command's one argument, a handle.
func (fsys *fileSystem) handleArg(c *tcf.Call) (*fsHandle, string, error) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		return nil, "", err
	}
	h, err := fsys.handle(c.Channel(), id)
	return h, id, err
}

func (fsys *fileSystem) dropHandle(ch *tcf.Channel, id string) {
	fsys.mu.Lock()
	delete(fsys.handles[ch], id)
	fsys.mu.Unlock()
}
