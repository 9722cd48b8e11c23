// ccbench's ns-3 counterpart for `make bench-ns3` (ns-3 3.44, built against the PyPI wheel).
//
// Topology (one sender/receiver pair per flow, shared bottleneck L -> R):
//
//   snd[i] --access-- L ==bottleneck== R --access-- rcv[i]
//
// * Bottleneck L -> R runs at --bw with the queue disc under test as root qdisc over a
//   one-packet device queue, so the standing queue (and its sojourn time) is in the qdisc.
//   The ACK direction R -> L has no qdisc and a 10000-packet device queue.
// * Access links: 10 x bw, 1 ms, 10000-packet device queue, no qdisc (they never drop).
// * Base RTT --rtt: 2 x (1 ms + bottleneck delay + 1 ms), bottleneck delay = rtt/2 - 2 ms.
// * TCP: MSS 1448 (timestamps on: 1500-byte IP packets, 1502 B with the PPP header),
//   send/receive buffers 4/6 MiB (Linux tcp_wmem/tcp_rmem maxima) so no flow is
//   window-limited; flow i uses cc[i mod len] on both its hosts and starts at 100 ms + 10 ms i.
// * Statistics over [warmup, simTime]: per-flow goodput (PacketSink bytes), bottleneck
//   utilisation (IP bytes leaving the qdisc), qdisc sojourn of every dequeued packet
//   (mean and exact p50/p99 from the stored samples).
//
// Prints one line `RESULT {json}` (bench/ns3_bench.py reads it) after a short text summary.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

struct Options
{
    std::string name = "run";
    uint32_t flows = 1;
    std::string cc = "cubic";
    double bwMbps = 100;
    double rttMs = 25;
    std::string aqm = "fqcodel"; // fifo | fqcodel | fqcodel-l4s
    uint32_t limitPkts = 1000;   // fifo limit
    double ceMs = 1;             // fqcodel-l4s: CE threshold for ECT(1)
    bool ecn = false;
    double simTime = 60;
    double warmup = 10;
};

// Everything measured at the bottleneck qdisc after warm-up.
struct Meter
{
    Time from;
    std::map<uint32_t, uint32_t> flowOfAddr; // sender IPv4 -> flow index
    std::vector<double> sojournUs;           // every dequeued packet after warm-up
    std::vector<double> flowSojournSum;
    std::vector<uint64_t> flowSojournN;
    std::vector<uint64_t> flowDrops;
    std::vector<uint64_t> flowMarks;

    int Flow(Ptr<const QueueDiscItem> item) const
    {
        auto ip = DynamicCast<const Ipv4QueueDiscItem>(item);
        if (!ip)
        {
            return -1;
        }
        auto it = flowOfAddr.find(ip->GetHeader().GetSource().Get());
        return it == flowOfAddr.end() ? -1 : int(it->second);
    }

    void Dequeued(Ptr<const QueueDiscItem> item)
    {
        Time now = Simulator::Now();
        if (now < from)
        {
            return;
        }
        double us = (now - item->GetTimeStamp()).GetDouble() / 1e3;
        sojournUs.push_back(us);
        int f = Flow(item);
        if (f >= 0)
        {
            flowSojournSum[f] += us;
            flowSojournN[f]++;
        }
    }

    void Dropped(Ptr<const QueueDiscItem> item)
    {
        int f = Flow(item);
        if (f >= 0)
        {
            flowDrops[f]++;
        }
    }

    void Marked(Ptr<const QueueDiscItem> item, const char*)
    {
        int f = Flow(item);
        if (f >= 0)
        {
            flowMarks[f]++;
        }
    }

    // Nearest-rank percentile of the stored samples, in ms.
    double PercentileMs(double p)
    {
        if (sojournUs.empty())
        {
            return 0;
        }
        size_t rank = size_t(std::ceil(p * sojournUs.size()));
        size_t k = std::min(sojournUs.size() - 1, rank == 0 ? 0 : rank - 1);
        std::nth_element(sojournUs.begin(), sojournUs.begin() + k, sojournUs.end());
        return sojournUs[k] / 1e3;
    }
};

Meter g_meter;

void
OnDequeue(Ptr<const QueueDiscItem> item)
{
    g_meter.Dequeued(item);
}

void
OnDrop(Ptr<const QueueDiscItem> item)
{
    g_meter.Dropped(item);
}

void
OnMark(Ptr<const QueueDiscItem> item, const char* why)
{
    g_meter.Marked(item, why);
}

TypeId
CongestionControl(const std::string& name)
{
    if (name == "cubic")
    {
        return TcpCubic::GetTypeId();
    }
    if (name == "dctcp")
    {
        return TcpDctcp::GetTypeId();
    }
    if (name == "newreno")
    {
        return TcpNewReno::GetTypeId();
    }
    NS_FATAL_ERROR("unknown congestion control '" << name << "' (cubic, dctcp, newreno)");
}

std::vector<std::string>
CommaList(const std::string& s)
{
    std::vector<std::string> out;
    size_t start = 0;
    while (true)
    {
        size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma - start));
        if (comma == std::string::npos)
        {
            return out;
        }
        start = comma + 1;
    }
}

void
InstallBottleneckQdisc(const Options& o, TrafficControlHelper& tch)
{
    if (o.aqm == "fifo")
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc",
                             "MaxSize",
                             QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, o.limitPkts)));
    }
    else if (o.aqm == "fqcodel")
    {
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc");
    }
    else if (o.aqm == "fqcodel-l4s")
    {
        // ECT(1) packets are CE-marked above the step threshold; the rest see CoDel.
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc",
                             "UseL4s",
                             BooleanValue(true),
                             "CeThreshold",
                             TimeValue(MicroSeconds(uint64_t(o.ceMs * 1e3))));
    }
    else
    {
        NS_FATAL_ERROR("unknown aqm '" << o.aqm << "' (fifo, fqcodel, fqcodel-l4s)");
    }
}

} // namespace

int
main(int argc, char* argv[])
{
    using Clock = std::chrono::steady_clock;
    Clock::time_point start = Clock::now();
    Options o;
    CommandLine cmd;
    cmd.AddValue("name", "label copied into the result", o.name);
    cmd.AddValue("nFlows", "sender/receiver pairs", o.flows);
    cmd.AddValue("cc", "congestion controls, comma-separated, cycled over the flows", o.cc);
    cmd.AddValue("bw", "bottleneck rate, Mbit/s", o.bwMbps);
    cmd.AddValue("rtt", "base RTT, ms", o.rttMs);
    cmd.AddValue("aqm", "fifo | fqcodel | fqcodel-l4s", o.aqm);
    cmd.AddValue("fifoPkts", "fifo limit, packets", o.limitPkts);
    cmd.AddValue("ceThreshold", "fqcodel-l4s CE threshold, ms", o.ceMs);
    cmd.AddValue("ecn", "ECN on every TCP socket", o.ecn);
    cmd.AddValue("simTime", "simulated time, s", o.simTime);
    cmd.AddValue("warmup", "start of the measurement, s", o.warmup);
    cmd.Parse(argc, argv);
    g_meter.from = Seconds(o.warmup);

    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4u << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(6u << 20));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(o.ecn ? "On" : "Off"));
    Config::SetDefault("ns3::TcpDctcp::UseEct0", BooleanValue(o.aqm != "fqcodel-l4s"));

    const DataRate rate(uint64_t(o.bwMbps * 1e6));
    const Time hop = MilliSeconds(1);
    const Time bnDelay = MicroSeconds(uint64_t(o.rttMs * 500)) - 2 * hop;
    NS_ABORT_MSG_IF(bnDelay.IsNegative(), "rtt must be at least 4 ms");

    NodeContainer snd;
    NodeContainer rcv;
    NodeContainer mid;
    snd.Create(o.flows);
    rcv.Create(o.flows);
    mid.Create(2);
    InternetStackHelper().InstallAll();

    const std::vector<std::string> ccs = CommaList(o.cc);
    for (uint32_t i = 0; i < o.flows; i++)
    {
        TypeIdValue tid(CongestionControl(ccs[i % ccs.size()]));
        snd.Get(i)->GetObject<TcpL4Protocol>()->SetAttribute("SocketType", tid);
        rcv.Get(i)->GetObject<TcpL4Protocol>()->SetAttribute("SocketType", tid);
    }

    PointToPointHelper bn;
    bn.SetDeviceAttribute("DataRate", DataRateValue(rate));
    bn.SetChannelAttribute("Delay", TimeValue(bnDelay));
    bn.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer bnDev = bn.Install(mid.Get(0), mid.Get(1));
    DynamicCast<PointToPointNetDevice>(bnDev.Get(1))->GetQueue()->SetMaxSize(QueueSize("10000p"));

    // The qdisc goes on before addresses are assigned, which would install the default one.
    TrafficControlHelper tch;
    InstallBottleneckQdisc(o, tch);
    Ptr<QueueDisc> qdisc = tch.Install(bnDev.Get(0)).Get(0);
    Ipv4AddressHelper ip;
    ip.SetBase("10.0.0.0", "255.255.255.0");
    ip.Assign(bnDev);
    TrafficControlHelper::Default().Uninstall(bnDev.Get(1));

    PointToPointHelper edge;
    edge.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate.GetBitRate() * 10)));
    edge.SetChannelAttribute("Delay", TimeValue(hop));
    edge.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("10000p"));

    g_meter.flowSojournSum.assign(o.flows, 0);
    g_meter.flowSojournN.assign(o.flows, 0);
    g_meter.flowDrops.assign(o.flows, 0);
    g_meter.flowMarks.assign(o.flows, 0);
    std::vector<Ipv4Address> dst(o.flows);
    for (uint32_t i = 0; i < o.flows; i++)
    {
        NetDeviceContainer left = edge.Install(snd.Get(i), mid.Get(0));
        NetDeviceContainer right = edge.Install(mid.Get(1), rcv.Get(i));
        ip.SetBase(("10.1." + std::to_string(i) + ".0").c_str(), "255.255.255.0");
        Ipv4InterfaceContainer l = ip.Assign(left);
        ip.SetBase(("10.2." + std::to_string(i) + ".0").c_str(), "255.255.255.0");
        Ipv4InterfaceContainer r = ip.Assign(right);
        TrafficControlHelper::Default().Uninstall(left);
        TrafficControlHelper::Default().Uninstall(right);
        dst[i] = r.GetAddress(1);
        g_meter.flowOfAddr[l.GetAddress(0).Get()] = i;
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    std::vector<Ptr<PacketSink>> sink(o.flows);
    for (uint32_t i = 0; i < o.flows; i++)
    {
        const uint16_t port = 9000;
        PacketSinkHelper sh("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        sink[i] = DynamicCast<PacketSink>(sh.Install(rcv.Get(i)).Get(0));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(dst[i], port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(1448));
        bulk.Install(snd.Get(i)).Start(MilliSeconds(100 + 10 * i));
    }

    qdisc->TraceConnectWithoutContext("Dequeue", MakeCallback(&OnDequeue));
    qdisc->TraceConnectWithoutContext("Drop", MakeCallback(&OnDrop));
    qdisc->TraceConnectWithoutContext("Mark", MakeCallback(&OnMark));

    std::vector<uint64_t> rx0(o.flows, 0);
    uint64_t sent0 = 0;
    Simulator::Schedule(Seconds(o.warmup), [&]() {
        for (uint32_t i = 0; i < o.flows; i++)
        {
            rx0[i] = sink[i]->GetTotalRx();
        }
        sent0 = qdisc->GetStats().nTotalSentBytes;
    });
    Simulator::Stop(Seconds(o.simTime));
    Clock::time_point ready = Clock::now();
    Simulator::Run();
    Clock::time_point done = Clock::now();

    const double span = o.simTime - o.warmup;
    const QueueDisc::Stats& qs = qdisc->GetStats();
    const double util = double(qs.nTotalSentBytes - sent0) * 8 / (double(rate.GetBitRate()) * span);
    double totalMbps = 0;
    std::string flowsJson;
    for (uint32_t i = 0; i < o.flows; i++)
    {
        double mbps = double(sink[i]->GetTotalRx() - rx0[i]) * 8 / span / 1e6;
        double delayMs = g_meter.flowSojournN[i]
                             ? g_meter.flowSojournSum[i] / double(g_meter.flowSojournN[i]) / 1e3
                             : 0;
        totalMbps += mbps;
        char buf[256];
        std::snprintf(buf,
                      sizeof buf,
                      "%s{\"cc\":\"%s\",\"goodput_mbps\":%.6f,\"mean_qdelay_ms\":%.6f,"
                      "\"drops\":%llu,\"marks\":%llu}",
                      i ? "," : "",
                      ccs[i % ccs.size()].c_str(),
                      mbps,
                      delayMs,
                      (unsigned long long)g_meter.flowDrops[i],
                      (unsigned long long)g_meter.flowMarks[i]);
        flowsJson += buf;
    }
    double meanMs = 0;
    for (double us : g_meter.sojournUs)
    {
        meanMs += us;
    }
    meanMs = g_meter.sojournUs.empty() ? 0 : meanMs / double(g_meter.sojournUs.size()) / 1e3;
    const double p50 = g_meter.PercentileMs(0.50);
    const double p99 = g_meter.PercentileMs(0.99);
    const double setupS = std::chrono::duration<double>(ready - start).count();
    const double runS = std::chrono::duration<double>(done - ready).count();
    const unsigned long long events = Simulator::GetEventCount();

    std::printf("%s: %u flows (%s), %g Mbit/s, %g ms, %s, %g s: goodput %.3f Mbit/s, util %.1f %%, "
                "qdelay mean %.3f / p99 %.3f ms, %llu events in %.3f s\n",
                o.name.c_str(), o.flows, o.cc.c_str(), o.bwMbps, o.rttMs, o.aqm.c_str(), o.simTime,
                totalMbps, 100 * util, meanMs, p99, events, runS);
    std::printf("RESULT {\"name\":\"%s\",\"sim_s\":%g,\"warmup_s\":%g,\"total_goodput_mbps\":%.6f,"
                "\"link_util\":%.6f,\"qdelay_mean_ms\":%.6f,\"qdelay_p50_ms\":%.6f,\"qdelay_p99_ms\":%.6f,"
                "\"pkts_sent\":%llu,\"pkts_dropped\":%llu,\"pkts_marked\":%llu,\"events\":%llu,"
                "\"setup_s\":%.6f,\"run_s\":%.6f,\"flows\":[%s]}\n",
                o.name.c_str(), o.simTime, o.warmup, totalMbps, util, meanMs, p50, p99,
                (unsigned long long)qs.nTotalSentPackets, (unsigned long long)qs.nTotalDroppedPackets,
                (unsigned long long)qs.nTotalMarkedPackets, events, setupS, runS, flowsJson.c_str());
    Simulator::Destroy();
    return 0;
}
