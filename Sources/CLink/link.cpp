// jambridge_link.h over Ableton Link's C++ API. Link's own threads do its networking; these calls only capture and
// commit its app session state.
//
// Link's networking runs on a platform context of ours (issue 41), which Link's code cannot tell from its own: Link
// 3.0.6's Config.hpp names its Linux context `platforms::asio::Context<posix::ScanIpIfAddrs, NullLog,
// linux::ThreadFactory>`, and `ableton::Link` takes no other, so that exact type is specialized here, before Link.hpp
// makes anything of it. It is Ableton's asio context with three differences:
// - the interface scan (the context's scanner parameter) keeps only the interfaces the route file names;
// - a measurement of a session (Link opens a socket for each new session it hears, Measurement.hpp) gets a real
//   socket only while fewer than `measurementSockets` are open; past that it gets one without a descriptor, which
//   sends and hears nothing, and Link sees the measurement time out (as it does when a peer never answers) and
//   forgets the session. Refusing by throwing would not do: Link's MeasurementService catches it, but Sessions.hpp
//   then keeps the session for good without ever measuring it again;
// - every datagram Link sends to a unicast address spends from a budget for that address and one for all: past them
//   it is dropped, silently (a send that throws makes Link tear its gateway down and build it again).
#include "jambridge_link.h"

#include <ableton/platforms/Config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <ifaddrs.h>
#include <map>
#include <memory>
#include <mutex>
#include <net/if.h>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <time.h>
#include <type_traits>
#include <vector>

namespace jambridge {

/// The interfaces named for the Link instance being made on this thread (empty: every one): Link makes its context
/// itself, from an exception handler alone, so what it is to scan cannot come through the constructor.
thread_local const std::vector<std::string> *interfacesOfTheLinkBeingMade = nullptr;

/// Link's interface scan: the IPv4 addresses of the interfaces that are up and named (all of them if none is named).
/// Link scans every 5 s (discovery/Service.hpp), so an interface that comes up later is joined then.
struct NamedInterfaces {
    std::vector<std::string> names = interfacesOfTheLinkBeingMade ? *interfacesOfTheLinkBeingMade : std::vector<std::string>{};

    std::vector<::asio::ip::address> operator()() const {
        std::vector<::asio::ip::address> found;
        ifaddrs *list = nullptr;
        if (getifaddrs(&list) != 0) return found;
        for (auto *entry = list; entry; entry = entry->ifa_next) {
            if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET || !(entry->ifa_flags & IFF_UP)) continue;
            if (!names.empty() && std::find(names.begin(), names.end(), entry->ifa_name) == names.end()) continue;
            found.emplace_back(::asio::ip::address_v4(ntohl(reinterpret_cast<const sockaddr_in *>(entry->ifa_addr)->sin_addr.s_addr)));
        }
        freeifaddrs(list);
        return found;
    }
};

/// What one Link instance's sockets may hold and send, shared by its context and its sockets (from Link's thread, and
/// from the thread that destroys the instance once Link's has stopped).
class LinkBounds {
public:
    /// Sockets open at once for measuring sessions: a room has a session or two, a flood of forged ones as many as it
    /// likes.
    static constexpr int measurementSockets = 8;

    /// What a unicast socket Link opens on `address` is.
    enum class Unicast { gateway, measurement, refused };

    /// Takes a place for a unicast socket on `address`. Each gateway (one an interface address, Gateway.hpp) opens two
    /// first, which are never refused: its discovery's (IpV4Interface.hpp) and its ping responder's
    /// (PingResponder.hpp); any after them on the address is a measurement's.
    Unicast openUnicast(const ::asio::ip::address_v4 &address) {
        std::lock_guard<std::mutex> lock(mutex);
        if (gatewaySockets[address] < 2) {
            gatewaySockets[address]++;
            return Unicast::gateway;
        }
        if (measurements >= measurementSockets) return Unicast::refused;
        measurements++;
        return Unicast::measurement;
    }

    void closeUnicast(const ::asio::ip::address_v4 &address, Unicast kind) {
        std::lock_guard<std::mutex> lock(mutex);
        if (kind == Unicast::measurement) {
            measurements--;
        } else if (--gatewaySockets[address] == 0) {
            gatewaySockets.erase(address);
        }
    }

    /// Whether a datagram may go to `to`, spending from its budgets if so. Multicast is Link's own announcement
    /// (at most one each 50 ms on an interface, UdpMessenger.hpp) and spends nothing.
    bool maySend(const ::asio::ip::address &to) {
        if (to.is_multicast()) return true;
        std::lock_guard<std::mutex> lock(mutex);
        const auto now = std::chrono::steady_clock::now();
        total.refill(everyone, now);
        auto bucket = perAddress.find(to);
        if (bucket == perAddress.end()) {
            if (perAddress.size() >= trackedAddresses) {
                // A full bucket is as good as none.
                for (auto entry = perAddress.begin(); entry != perAddress.end();) {
                    entry->second.refill(oneAddress, now);
                    entry = entry->second.tokens >= oneAddress.burst ? perAddress.erase(entry) : std::next(entry);
                }
                if (perAddress.size() >= trackedAddresses) return false;
            }
            bucket = perAddress.emplace(to, Bucket{oneAddress.burst, now}).first;
        }
        bucket->second.refill(oneAddress, now);
        if (total.tokens < 1 || bucket->second.tokens < 1) return false;
        total.tokens--;
        bucket->second.tokens--;
        return true;
    }

private:
    struct Rate {
        double burst, perSecond;
    };
    struct Bucket {
        double tokens;
        std::chrono::steady_clock::time_point filled;
        void refill(Rate rate, std::chrono::steady_clock::time_point now) {
            tokens = std::min(rate.burst, tokens + rate.perSecond * std::chrono::duration<double>(now - filled).count());
            filled = now;
        }
    };
    /// One address, which may be several Link apps (one host's, or loopback's): a measurement is about 50 pings one
    /// way and 50 pongs the other within a second, and each app's announcements are answered 4 times a second; a
    /// few apps meeting measure each other at once. A flood naming one address gets 100 a second.
    static constexpr Rate oneAddress{600, 100};
    /// Everyone: a room's apps meeting at once.
    static constexpr Rate everyone{1200, 600};
    /// Addresses with a budget kept: past them, a datagram to an address not among them is dropped.
    static constexpr size_t trackedAddresses = 1024;

    std::mutex mutex;
    std::map<::asio::ip::address_v4, int> gatewaySockets;
    int measurements = 0;
    Bucket total{everyone.burst, std::chrono::steady_clock::now()};
    std::map<::asio::ip::address, Bucket> perAddress;
};

/// A socket of Link's under `LinkBounds`: `socket` is empty for a measurement refused a descriptor.
template <std::size_t MaxPacketSize>
struct BoundedSocket {
    /// Gives a unicast socket's place back once the socket (not a moved-from one) has closed.
    struct Place {
        std::shared_ptr<LinkBounds> bounds;
        ::asio::ip::address_v4 address;
        LinkBounds::Unicast kind;
        ~Place() { bounds->closeUnicast(address, kind); }
    };

    std::unique_ptr<Place> place;
    std::shared_ptr<LinkBounds> bounds;
    std::optional<ableton::platforms::asio::Socket<MaxPacketSize>> socket;

    std::size_t send(const uint8_t *const data, const size_t size, const ::asio::ip::udp::endpoint &to) {
        return socket && bounds->maySend(to.address()) ? socket->send(data, size, to) : 0;
    }

    template <typename Handler> void receive(Handler handler) {
        if (socket) socket->receive(std::move(handler));
    }

    ::asio::ip::udp::endpoint endpoint() const { return socket ? socket->endpoint() : ::asio::ip::udp::endpoint{}; }
};

} // namespace jambridge

namespace ableton::platforms::asio {

static_assert(std::is_same_v<link::platform::IoContext, Context<posix::ScanIpIfAddrs, util::NullLog, linux::ThreadFactory>>,
              "Link's platform context is not the one specialized here");

template <>
class Context<posix::ScanIpIfAddrs, util::NullLog, linux::ThreadFactory>
    : public Context<jambridge::NamedInterfaces, util::NullLog, linux::ThreadFactory> {
    using Base = Context<jambridge::NamedInterfaces, util::NullLog, linux::ThreadFactory>;
    std::shared_ptr<jambridge::LinkBounds> bounds = std::make_shared<jambridge::LinkBounds>();

public:
    template <std::size_t BufferSize> using Socket = jambridge::BoundedSocket<BufferSize>;

    template <typename ExceptionHandler> explicit Context(ExceptionHandler handler) : Base(std::move(handler)) {}
    Context(Context &&) = default;

    template <std::size_t BufferSize> Socket<BufferSize> openUnicastSocket(const ::asio::ip::address_v4 &address) {
        const auto kind = bounds->openUnicast(address);
        if (kind == jambridge::LinkBounds::Unicast::refused) return {nullptr, bounds, std::nullopt};
        // Made where it stays: a temporary Place would give the place back as it went.
        return {std::unique_ptr<typename Socket<BufferSize>::Place>(new typename Socket<BufferSize>::Place{bounds, address, kind}),
                bounds, Base::openUnicastSocket<BufferSize>(address)};
    }

    /// Ableton's, hearing the group on `address`'s interface only: bound to 0.0.0.0 it would otherwise also hear it
    /// on every interface some other socket of the host joined it on (IP_MULTICAST_ALL, ip(7)).
    template <std::size_t BufferSize> Socket<BufferSize> openMulticastSocket(const ::asio::ip::address_v4 &address) {
        auto socket = Base::openMulticastSocket<BufferSize>(address);
        const int all = 0;
        setsockopt(socket.mpImpl->mSocket.native_handle(), IPPROTO_IP, IP_MULTICAST_ALL, &all, sizeof all);
        return {nullptr, bounds, std::move(socket)};
    }
};

} // namespace ableton::platforms::asio

#include <ableton/Link.hpp>

struct jb_link {
    ableton::Link link;
    explicit jb_link(double bpm) : link(bpm) {}
};

jb_link *jb_link_create(double bpm, const char *const *interfaces, int count, char *error, int size) {
    const std::vector<std::string> names(interfaces, interfaces + count);
    jambridge::interfacesOfTheLinkBeingMade = &names;
    try {
        auto *made = new jb_link(bpm);
        jambridge::interfacesOfTheLinkBeingMade = nullptr;
        made->link.enableStartStopSync(true);
        return made;
    } catch (const std::exception &failure) {
        std::snprintf(error, size, "%s", failure.what());
    } catch (...) {
        std::snprintf(error, size, "an unknown error");
    }
    jambridge::interfacesOfTheLinkBeingMade = nullptr;
    return nullptr;
}

void jb_link_destroy(jb_link *link) { delete link; }

void jb_link_enable(jb_link *link, bool enable) { link->link.enable(enable); }

uint64_t jb_link_peers(jb_link *link) { return link->link.numPeers(); }

static int64_t nanoseconds(clockid_t clock) {
    timespec now{};
    clock_gettime(clock, &now);
    return int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
}

int64_t jb_link_clock_offset(void) {
    int64_t best = 0, narrowest = INT64_MAX;
    for (int reading = 0; reading < 5; reading++) {
        int64_t before = nanoseconds(CLOCK_MONOTONIC), raw = nanoseconds(CLOCK_MONOTONIC_RAW),
                after = nanoseconds(CLOCK_MONOTONIC);
        if (after - before < narrowest) {
            narrowest = after - before;
            best = raw - (before + (after - before) / 2);
        }
    }
    return best;
}

jb_link_state jb_link_capture(jb_link *link, double quantum) {
    auto state = link->link.captureAppSessionState();
    auto now = link->link.clock().micros();
    return jb_link_state{state.tempo(), state.beatAtTime(now, quantum), now.count(), state.isPlaying(),
                         state.timeForIsPlaying().count()};
}

void jb_link_set_tempo(jb_link *link, double bpm, int64_t time) {
    auto state = link->link.captureAppSessionState();
    state.setTempo(bpm, std::chrono::microseconds(time));
    link->link.commitAppSessionState(state);
}

void jb_link_set_playing(jb_link *link, bool playing, int64_t time) {
    auto state = link->link.captureAppSessionState();
    state.setIsPlaying(playing, std::chrono::microseconds(time));
    link->link.commitAppSessionState(state);
}

void jb_link_request_beat(jb_link *link, double beat, int64_t time, double quantum) {
    auto state = link->link.captureAppSessionState();
    state.requestBeatAtTime(beat, std::chrono::microseconds(time), quantum);
    link->link.commitAppSessionState(state);
}
