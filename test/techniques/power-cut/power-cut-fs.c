/*
 * power-cut-fs: a FUSE passthrough over a backing directory that behaves as an SD card on power
 * loss: file contents written since the file's last fsync/fdatasync live only in this process's
 * memory. An fsync writes them to the backing file and syncs it. Killing this process (SIGKILL)
 * and unmounting is the power cut: every write not yet synced is gone, every synced one is kept.
 *
 *   power-cut-fs <backing-dir> <mountpoint> -f -s
 *
 * What it models, and why that is faithful for SQLite in WAL mode:
 * - Data (write, ftruncate, a size grown by a write) is volatile until that file's fsync/fdatasync;
 *   an fsync of one file makes nothing of another file durable (SQLite syncs the WAL at a FULL
 *   commit, the database file and then the WAL header at a checkpoint).
 * - Names (create, unlink, rename, mkdir) reach the backing directory at once, i.e. they are as
 *   durable as after a directory fsync. SQLite fsyncs the directory after creating a journal or a
 *   WAL (UNIXFILE_DIRSYNC), so a card keeps those names too; the model is optimistic only for a
 *   name nobody synced the directory of, which SQLite's correctness does not rely on.
 * - The -shm file is written through mmap (the kernel sends its pages here like any write). It is
 *   never synced, so a cut loses it, as a power cut does: SQLite rebuilds it from the WAL.
 * - Nothing is reordered: what is synced is exactly the file's bytes at the time of its fsync.
 * Built by test/techniques/power-cut/build.sh against Debian's libfuse3-dev; nothing of it ships.
 * Why not LazyFS (github.com/dsrhaslab/lazyfs): its CMake build downloads spdlog and toml11 (or needs
 * Debian's packages wired in their place); this file needs only libfuse3 and does what the tests
 * need — lose exactly the unsynced writes at a kill — and nothing more.
 */
#define FUSE_USE_VERSION 31
#include <fuse.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static char backing[PATH_MAX];

/* A file with writes since its last sync: its whole current content, in memory. */
struct dirty {
  char *path;
  char *buf;
  size_t size, cap;
  struct dirty *next;
};
static struct dirty *dirty_files;

static void real(char out[PATH_MAX], const char *path) { snprintf(out, PATH_MAX, "%s%s", backing, path); }

static struct dirty *find(const char *path) {
  for (struct dirty *d = dirty_files; d; d = d->next)
    if (strcmp(d->path, path) == 0) return d;
  return NULL;
}

static void drop(const char *path) {
  for (struct dirty **p = &dirty_files; *p; p = &(*p)->next)
    if (strcmp((*p)->path, path) == 0) {
      struct dirty *d = *p;
      *p = d->next;
      free(d->path);
      free(d->buf);
      free(d);
      return;
    }
}

static int reserve(struct dirty *d, size_t size) {
  if (size <= d->cap) return 0;
  size_t cap = d->cap ? d->cap : 4096;
  while (cap < size) cap *= 2;
  char *buf = realloc(d->buf, cap);
  if (!buf) return -ENOMEM;
  d->buf = buf;
  d->cap = cap;
  return 0;
}

/* The dirty entry of a file, loaded from its synced content on the first unsynced write. */
static int load(const char *path, struct dirty **out) {
  struct dirty *d = find(path);
  if (d) {
    *out = d;
    return 0;
  }
  char p[PATH_MAX];
  real(p, path);
  int fd = open(p, O_RDONLY);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  d = calloc(1, sizeof *d);
  if (!d || reserve(d, (size_t)st.st_size + 1) < 0) {
    close(fd);
    free(d);
    return -ENOMEM;
  }
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t n = pread(fd, d->buf + got, (size_t)st.st_size - got, (off_t)got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  d->size = got;
  d->path = strdup(path);
  d->next = dirty_files;
  dirty_files = d;
  *out = d;
  return 0;
}

static int resize(struct dirty *d, size_t size) {
  if (size > d->size) {
    int e = reserve(d, size);
    if (e) return e;
    memset(d->buf + d->size, 0, size - d->size);
  }
  d->size = size;
  return 0;
}

static void *pc_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  (void)conn;
  /* The kernel asks again every time: sizes and names come from here, never from its caches. */
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->direct_io = 0;
  return NULL;
}

static int pc_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  (void)fi;
  char p[PATH_MAX];
  real(p, path);
  if (lstat(p, st) < 0) return -errno;
  struct dirty *d = find(path);
  if (d) st->st_size = (off_t)d->size;
  return 0;
}

static int pc_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  char p[PATH_MAX];
  real(p, path);
  DIR *dir = opendir(p);
  if (!dir) return -errno;
  struct dirent *e;
  while ((e = readdir(dir))) fill(buf, e->d_name, NULL, 0, 0);
  closedir(dir);
  return 0;
}

static int pc_open(const char *path, struct fuse_file_info *fi) {
  char p[PATH_MAX];
  real(p, path);
  if (access(p, F_OK) < 0) return -errno;
  if (fi->flags & O_TRUNC) {
    struct dirty *d;
    int e = load(path, &d);
    if (e) return e;
    resize(d, 0);
  }
  return 0;
}

static int pc_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
  (void)fi;
  char p[PATH_MAX];
  real(p, path);
  int fd = open(p, O_CREAT | O_WRONLY, mode);
  if (fd < 0) return -errno;
  close(fd);
  return 0;
}

static int pc_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)fi;
  struct dirty *d = find(path);
  if (d) {
    if ((size_t)off >= d->size) return 0;
    size_t n = d->size - (size_t)off < size ? d->size - (size_t)off : size;
    memcpy(buf, d->buf + off, n);
    return (int)n;
  }
  char p[PATH_MAX];
  real(p, path);
  int fd = open(p, O_RDONLY);
  if (fd < 0) return -errno;
  ssize_t n = pread(fd, buf, size, off);
  int e = errno;
  close(fd);
  return n < 0 ? -e : (int)n;
}

static int pc_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)fi;
  struct dirty *d;
  int e = load(path, &d);
  if (e) return e;
  size_t end = (size_t)off + size;
  if (end > d->size && (e = resize(d, end))) return e;
  memcpy(d->buf + off, buf, size);
  return (int)size;
}

static int pc_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  (void)fi;
  struct dirty *d;
  int e = load(path, &d);
  if (e) return e;
  return resize(d, (size_t)size);
}

/* The only way a content reaches the card: the file's bytes as they are now, then a real fsync. */
static int pc_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)datasync, (void)fi;
  struct dirty *d = find(path);
  if (!d) return 0;
  char p[PATH_MAX];
  real(p, path);
  int fd = open(p, O_WRONLY);
  if (fd < 0) return -errno;
  size_t done = 0;
  while (done < d->size) {
    ssize_t n = pwrite(fd, d->buf + done, d->size - done, (off_t)done);
    if (n < 0) {
      int e = -errno;
      close(fd);
      return e;
    }
    done += (size_t)n;
  }
  if (ftruncate(fd, (off_t)d->size) < 0 || fsync(fd) < 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  close(fd);
  drop(path);
  return 0;
}

static int pc_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path, (void)datasync, (void)fi;
  return 0; /* names are durable at once (see the top) */
}

static int pc_unlink(const char *path) {
  char p[PATH_MAX];
  real(p, path);
  if (unlink(p) < 0) return -errno;
  drop(path);
  return 0;
}

static int pc_rename(const char *from, const char *to, unsigned int flags) {
  if (flags) return -EINVAL;
  char a[PATH_MAX], b[PATH_MAX];
  real(a, from);
  real(b, to);
  if (rename(a, b) < 0) return -errno;
  drop(to);
  struct dirty *d = find(from);
  if (d) {
    free(d->path);
    d->path = strdup(to);
  }
  return 0;
}

static int pc_mkdir(const char *path, mode_t mode) {
  char p[PATH_MAX];
  real(p, path);
  return mkdir(p, mode) < 0 ? -errno : 0;
}

static int pc_rmdir(const char *path) {
  char p[PATH_MAX];
  real(p, path);
  return rmdir(p) < 0 ? -errno : 0;
}

static int pc_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
  (void)fi;
  char p[PATH_MAX];
  real(p, path);
  return chmod(p, mode) < 0 ? -errno : 0;
}

static int pc_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
  (void)fi;
  char p[PATH_MAX];
  real(p, path);
  return lchown(p, uid, gid) < 0 ? -errno : 0;
}

static int pc_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
  (void)fi;
  char p[PATH_MAX];
  real(p, path);
  return utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int pc_statfs(const char *path, struct statvfs *st) {
  (void)path;
  return statvfs(backing, st) < 0 ? -errno : 0;
}

static const struct fuse_operations ops = {
    .init = pc_init,
    .getattr = pc_getattr,
    .readdir = pc_readdir,
    .open = pc_open,
    .create = pc_create,
    .read = pc_read,
    .write = pc_write,
    .truncate = pc_truncate,
    .fsync = pc_fsync,
    .fsyncdir = pc_fsyncdir,
    .unlink = pc_unlink,
    .rename = pc_rename,
    .mkdir = pc_mkdir,
    .rmdir = pc_rmdir,
    .chmod = pc_chmod,
    .chown = pc_chown,
    .utimens = pc_utimens,
    .statfs = pc_statfs,
};

int main(int argc, char *argv[]) {
  if (argc < 3) {
    fprintf(stderr, "usage: power-cut-fs <backing-dir> <mountpoint> [fuse options]\n");
    return 64;
  }
  if (!realpath(argv[1], backing)) {
    perror(argv[1]);
    return 66;
  }
  argv[1] = argv[0];
  return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
