/* fuse_hang MOUNTPOINT UID GID [CONTENT]: a FUSE file system (spoken on /dev/fuse directly; no libfuse)
 * holding one file, job.json, owned by UID:GID, that can be looked up, stat'ed and opened, but whose reads
 * are never answered: the file system that does not answer, for the tests of the plugin's read deadlines.
 * With CONTENT (a file), the reads of the first open get its bytes and only later opens hang: a reader that
 * comes first (the prolog) succeeds, the next (a task) does not. Runs as root in the foreground until
 * killed; the kernel fails what is pending when it goes. Prints "mounted", then "open N by pid P" for each
 * open of the file. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int fuse_fd;
static unsigned uid, gid;
static char content[65536];
static size_t content_len;
static uint64_t opens;

static void reply(const struct fuse_in_header *in, int error, const void *arg, size_t size)
{
    static char buf[sizeof(struct fuse_out_header) + sizeof content];
    struct fuse_out_header out = {.len = (uint32_t)(sizeof out + (error ? 0 : size)), .error = -error,
                                  .unique = in->unique};
    memcpy(buf, &out, sizeof out);
    if (!error && size)
        memcpy(buf + sizeof out, arg, size);
    if (write(fuse_fd, buf, out.len) < 0 && errno != ENOENT) /* ENOENT: the request was interrupted */
        perror("fuse_hang: write");
}

static void attr_of(uint64_t node, struct fuse_attr *a)
{
    memset(a, 0, sizeof *a);
    a->ino = node;
    a->nlink = 1;
    a->uid = node == FUSE_ROOT_ID ? 0 : uid;
    a->gid = node == FUSE_ROOT_ID ? 0 : gid;
    a->mode = node == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
    a->size = node == FUSE_ROOT_ID ? 0 : content_len ? content_len : 200;
    a->blksize = 4096;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: fuse_hang MOUNTPOINT UID GID [CONTENT]\n");
        return 2;
    }
    if (argc == 5) {
        FILE *f = fopen(argv[4], "rb");
        content_len = f ? fread(content, 1, sizeof content, f) : 0;
        if (!f || content_len == 0) {
            perror("fuse_hang: content");
            return 1;
        }
        fclose(f);
    }
    uid = (unsigned)atoi(argv[2]);
    gid = (unsigned)atoi(argv[3]);
    fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    char opts[128];
    snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fuse_fd);
    if (fuse_fd < 0 || mount("fuse_hang", argv[1], "fuse", MS_NOSUID | MS_NODEV, opts) != 0) {
        perror("fuse_hang: mount");
        return 1;
    }
    printf("mounted\n");
    fflush(stdout);
    static char buf[FUSE_MIN_READ_BUFFER + 65536];
    for (;;) {
        ssize_t n = read(fuse_fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == ENOENT))
            continue;
        if (n < (ssize_t)sizeof(struct fuse_in_header))
            return n < 0 && errno == ENODEV ? 0 : 1; /* ENODEV: unmounted */
        const struct fuse_in_header *in = (const void *)buf;
        const char *arg = buf + sizeof *in;
        switch (in->opcode) {
        case FUSE_INIT: {
            const struct fuse_init_in *i = (const void *)arg;
            struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
                                      .max_readahead = i->max_readahead, .max_write = 4096};
            reply(in, 0, &o, sizeof o);
            break;
        }
        case FUSE_LOOKUP: {
            struct fuse_entry_out e = {.nodeid = 2, .generation = 1};
            attr_of(2, &e.attr);
            reply(in, in->nodeid == FUSE_ROOT_ID && strcmp(arg, "job.json") == 0 ? 0 : ENOENT, &e, sizeof e);
            break;
        }
        case FUSE_GETATTR: {
            struct fuse_attr_out a = {0};
            attr_of(in->nodeid, &a.attr);
            reply(in, 0, &a, sizeof a);
            break;
        }
        case FUSE_OPEN:
        case FUSE_OPENDIR: {
            struct fuse_open_out o = {.fh = in->opcode == FUSE_OPEN ? ++opens : 0};
            reply(in, 0, &o, sizeof o);
            if (in->opcode == FUSE_OPEN) { /* the tests count who opened the file */
                printf("open %llu by pid %u\n", (unsigned long long)opens, in->pid);
                fflush(stdout);
            }
            break;
        }
        case FUSE_READ: {
            const struct fuse_read_in *r = (const void *)arg;
            if (content_len && r->fh == 1) { /* the first open: its bytes */
                size_t off = r->offset < content_len ? (size_t)r->offset : content_len;
                size_t len = content_len - off < r->size ? content_len - off : r->size;
                reply(in, 0, content + off, len);
            }
            break; /* every other read: never answered */
        }
        case FUSE_FORGET:
        case FUSE_BATCH_FORGET:
        case FUSE_INTERRUPT:
            break; /* no reply expected; an interrupted read stays unanswered */
        case FUSE_READDIR:
        case FUSE_RELEASE:
        case FUSE_RELEASEDIR:
        case FUSE_FLUSH:
        case FUSE_ACCESS:
            reply(in, 0, NULL, 0);
            break;
        default:
            reply(in, ENOSYS, NULL, 0);
        }
    }
}
