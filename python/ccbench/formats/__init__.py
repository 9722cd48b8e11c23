"""A run in other formats: its packets as pcap (:mod:`.pcap`), its series as a flent file
(:mod:`.flent`), and the emulator's records as a run directory (:mod:`.emulator`)."""
