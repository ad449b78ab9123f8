// tests/sandbox/test_learn.py: learn.h's supervisor logs a call the filter would refuse and lets it
// run. argv: HEXPROG LOGFILE. Prints the socket's fd (>= 0: the call ran).
#include "../../../judge/worker/native/learn.h"

#include <sys/socket.h>

#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    std::string hex = argv[1];
    std::vector<sock_filter> prog(hex.size() / 16);
    for (size_t i = 0; i < hex.size() / 2; i++)
        reinterpret_cast<unsigned char*>(prog.data())[i] = (unsigned char)strtol(hex.substr(2 * i, 2).c_str(), nullptr, 16);
    sock_fprog f{(unsigned short)prog.size(), prog.data()};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !learn::prepare(argv[2]) || !learn::install(&f)) return 3;
    printf("%d\n", socket(AF_INET, SOCK_STREAM, 0));
    return 0;
}
