"""Alphabets that real files need (issue 20): ``alphabet="auto"`` inferred from the data or the
scoring, RNA read as DNA, the IUPAC amino acids U/O/J, and MEMs only on nucleotides."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import gpualign
from gpualign import Scoring, SequenceSet
from gpualign.cli import main
from gpualign.io import read_records
from gpualign.sequences import ALPHABETS, encode, infer_alphabet, resolve_alphabet

DATA = Path(__file__).resolve().parent / "data"
UNIPROT = DATA / "uniprot_200.fasta.gz"  # 200 real proteins
RDP16S = DATA / "rdp16s_200.fasta.gz"  # 200 real 16S genes, a few IUPAC codes
ECOLI_READS = DATA / "ecoli_reads_2000.fastq.gz"

DNA = "ACGTTGCAACGGTTACGATCGATTACA"
RNA = DNA.replace("T", "U")
PEPTIDE = "MEEPQSDPSVEPPLSQETFSDLWKLLPENNVLSPLPSQAMDDLMLSPDDIEQWFTEDPGP"


def write_fasta(path: Path, records: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f">{name}\n{sequence}\n" for name, sequence in records))
    return path


@pytest.fixture(scope="module")
def proteins() -> list[tuple[str, str]]:
    return list(read_records(UNIPROT))


def summary_line(err: str) -> str:
    # A progress bar may come first (shown when the run outlasts a second); the summary is last.
    return err.strip().splitlines()[-1].split("\r")[-1]


# --- inference -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, name", [
    (DNA, "dna"),
    (RNA, "dna"),
    (DNA.lower(), "dna"),
    (RNA.lower(), "dna"),
    ("N" * 60 + DNA, "dna"),  # N-heavy (assembly gaps)
    (DNA[:20] + "RY" + DNA[20:], "dna"),  # a few IUPAC codes
    ("ACGT-" * 10 + "..", "dna"),  # gaps are no symbols
    ("", "dna"),
    ("---", "dna"),
    (PEPTIDE, "protein"),
    (PEPTIDE.lower(), "protein"),
    (PEPTIDE + "UOJBZX*", "protein"),  # selenocysteine, pyrrolysine, ambiguity codes, stop
    (PEPTIDE[:20] + "--" + PEPTIDE[20:], "protein"),  # aligned (gapped) protein
    ("Hello, world!", "bytes"),
    ("héllo", "bytes"),
    ("12345", "bytes"),
])
def test_infer_alphabet(text, name):
    assert infer_alphabet(text.encode("utf-8")).name == name
    assert resolve_alphabet("auto", [text])[0].name == name


def test_a_peptide_of_iupac_nucleotide_codes_only_is_not_dna():
    # Every letter is an IUPAC nucleotide code, few are A/C/G/T/U/N.
    assert infer_alphabet(b"MKWRSDHVMKWRSDHVYY").name == "protein"


def test_resolve_keeps_explicit_alphabets_and_sets():
    assert resolve_alphabet("protein", ["ACGT"])[0] is ALPHABETS["protein"]
    assert resolve_alphabet(ALPHABETS["bytes"], ["ACGT"])[0] is ALPHABETS["bytes"]
    encoded = SequenceSet.from_sequences(["ACGT"], "protein")
    assert resolve_alphabet("auto", ["ACGT"], encoded)[0] is ALPHABETS["protein"]
    # A substitution matrix implies protein, unless a set is encoded already.
    assert resolve_alphabet("auto", ["ACGT"], matrix=True)[0] is ALPHABETS["protein"]
    dna = SequenceSet.from_sequences(["ACGT"])
    assert resolve_alphabet("auto", dna, matrix=True)[0] is ALPHABETS["dna"]
    with pytest.raises(ValueError, match="unknown alphabet"):
        resolve_alphabet("rna", ["ACGU"])


def test_resolve_infers_once_from_both_sides():
    # A short DNA-looking query against proteins: both sides are protein.
    alphabet, (queries, targets) = resolve_alphabet("auto", ["ACGT"], [PEPTIDE] * 3)
    assert alphabet.name == "protein" and queries == ["ACGT"] and targets == [PEPTIDE] * 3


def test_resolve_puts_the_first_records_of_an_iterator_back():
    records = (DNA for _ in range(3000))
    alphabet, (again,) = resolve_alphabet("auto", records)
    assert alphabet.name == "dna" and len(list(again)) == 3000
    pairs = iter([("a", PEPTIDE), ("b", "MKV")])
    alphabet, (again,) = resolve_alphabet("auto", pairs)
    assert alphabet.name == "protein" and list(again) == [("a", PEPTIDE), ("b", "MKV")]


def test_resolve_reads_the_start_of_files(tmp_path):
    for path, name in ((UNIPROT, "protein"), (RDP16S, "dna"), (ECOLI_READS, "dna")):
        assert resolve_alphabet("auto", path)[0].name == name, path
    rna = tmp_path / "rna.fa.gz"
    with gzip.open(rna, "wt") as handle:
        handle.write(f">r1 some RNA\n{RNA[:10]}\n{RNA[10:]}\n")
    assert resolve_alphabet("auto", rna)[0].name == "dna"
    # A file that cannot be read leaves the decision (and the error) to the reading.
    missing = tmp_path / "missing.fa"
    assert resolve_alphabet("auto", missing)[0].name == "dna"
    with pytest.raises(gpualign.SequenceFileError, match="no such file"):
        gpualign.lcs_length("ACGT", missing, backend="cpu")


def test_sequence_sets_accept_auto(tmp_path):
    assert SequenceSet.from_sequences([PEPTIDE], "auto").alphabet.name == "protein"
    assert SequenceSet.from_file(UNIPROT, "auto").alphabet.name == "protein"
    path = write_fasta(tmp_path / "rna.fa", [("r", RNA)])
    assert SequenceSet.from_file(path, "auto")[0] == DNA
    assert gpualign.sequences.as_sequence_set([PEPTIDE], "auto").alphabet.name == "protein"


def test_sequence_functions_infer_when_no_alphabet_is_named(tmp_path):
    # Proteins and RNA without naming the alphabet, in every function that encodes symbols;
    # DNA gives the codes it gave with "dna".
    from gpualign.sequences import encode_many, encode_packed, read_sets
    from gpualign.streaming import iter_batches

    protein, dna = ALPHABETS["protein"], ALPHABETS["dna"]
    assert encode(PEPTIDE + "UO").tolist() == encode(PEPTIDE + "UO", "protein").tolist()
    assert encode(RNA).tolist() == encode(DNA, "dna").tolist()
    codes, offsets = encode_many([PEPTIDE, "MKV*"])
    assert protein.decode(codes) == PEPTIDE + "MKV*" and offsets.tolist() == [0, 60, 64]
    assert encode_many([DNA, RNA])[0].tolist() == encode_many([DNA, DNA], "dna")[0].tolist()
    raw = (PEPTIDE * 2).encode()
    assert encode_packed(raw, [0, 60, 120]).tolist() == encode(PEPTIDE * 2, "protein").tolist()
    assert SequenceSet.from_sequences([PEPTIDE, "U"]).alphabet is protein
    assert SequenceSet.from_sequences([RNA]).codes.tolist() == encode(DNA, "dna").tolist()
    rna_file = write_fasta(tmp_path / "rna.fa", [("r", RNA), ("s", RNA[::-1])])
    for read in (SequenceSet.from_file(rna_file), *SequenceSet.iter_file(rna_file),
                 *(chunk for _, chunk in read_sets(rna_file))):
        assert read.alphabet is dna and read[0] == DNA
    assert SequenceSet.from_file(UNIPROT).alphabet is protein
    assert {chunk.alphabet.name for chunk in SequenceSet.iter_file(UNIPROT,
                                                                   batch_residues=5000)} == {
        "protein"}
    assert gpualign.sequences.as_sequence_set(iter([PEPTIDE])).alphabet is protein
    first_protein = SequenceSet.from_file(UNIPROT, "protein")[0]
    for source, first in (([PEPTIDE, "MKV"], PEPTIDE), (iter([PEPTIDE, "MKV"]), PEPTIDE),
                          (UNIPROT, first_protein)):
        batches = list(iter_batches(source, batch_residues=50))
        assert {batch.sequences.alphabet.name for batch in batches} == {"protein"}
        assert batches[0].sequences[0] == first
    for path in (RDP16S, ECOLI_READS):  # DNA: the codes that "dna" gives
        inferred = SequenceSet.from_file(path, invalid="wildcard")
        named = SequenceSet.from_file(path, "dna", invalid="wildcard")
        assert inferred.alphabet is dna and inferred.codes.tolist() == named.codes.tolist()


# --- RNA and the IUPAC amino acids -----------------------------------------------------------


def test_dna_reads_u_as_t_and_other_iupac_codes_follow_invalid():
    assert encode("ACGUu").tolist() == encode("ACGTT").tolist()
    with pytest.raises(gpualign.InvalidSymbolError, match="'R' at position 2"):
        encode("ACRU")
    assert ALPHABETS["dna"].decode(encode("ACRU", invalid="wildcard")) == "ACNT"


def test_protein_reads_u_o_j_as_c_k_x():
    protein = ALPHABETS["protein"]
    assert protein.size == 24
    assert protein.decode(encode("UuOoJjBZX*", "protein")) == "CCKKXXBZX*"
    blosum = Scoring.matrix("BLOSUM62")
    assert blosum.score("U", "C") == blosum.score("C", "C")
    assert blosum.score("O", "W") == blosum.score("K", "W")
    assert blosum.score("J", "J") == blosum.score("X", "X")


def test_rna_equals_its_dna_spelling(backend):
    queries, targets = [RNA, RNA[3:]], [DNA[:-2], DNA]
    dna_queries = [q.replace("U", "T") for q in queries]
    rna = gpualign.edit_distance(queries, targets, task="path", backend=backend)
    dna = gpualign.edit_distance(dna_queries, targets, task="path", backend=backend)
    assert rna.alphabet == "dna" and rna.distance.tolist() == dna.distance.tolist()
    assert rna.cigar == dna.cigar
    aligned = gpualign.align(queries, targets, mode="local", task="path", backend=backend)
    assert aligned.alphabet == "dna" and aligned.cigar == gpualign.align(
        dna_queries, targets, mode="local", task="path", backend=backend).cigar
    assert aligned.identity[0] == 1.0
    top = gpualign.lcs_top(RNA.lower(), [DNA, DNA[::2]], 2, backend=backend)
    assert top.alphabet == "dna" and top.length.tolist() == [len(DNA), len(DNA[::2])]
    assert top.lcs[0] == DNA


# --- every capability infers ------------------------------------------------------------------


def test_lcs_length_of_proteins_without_naming_the_alphabet(proteins, backend):
    query = proteins[17][1]
    subjects = [sequence for _, sequence in proteins]
    inferred = gpualign.lcs_length(query, subjects, backend=backend)
    assert inferred.tolist() == gpualign.lcs_length(query, subjects, alphabet="protein",
                                                    backend=backend).tolist()
    assert inferred[17] == len(query)
    assert gpualign.lcs_length(query, UNIPROT, backend=backend).tolist() == inferred.tolist()
    top = gpualign.lcs_top(query, iter(subjects), 3, backend=backend)
    assert top.alphabet == "protein" and top.index[0] == 17 and top.lcs[0] == query
    matrix = gpualign.lcs_length_matrix([query, proteins[3][1]], UNIPROT, backend=backend)
    assert matrix[0].tolist() == inferred.tolist() and matrix[1, 3] == len(proteins[3][1])


def test_align_proteins_with_a_matrix_without_naming_the_alphabet(proteins, backend):
    queries = [sequence for _, sequence in proteins[:6]]
    targets = [sequence for _, sequence in proteins[6:12]]
    blosum = Scoring.matrix("BLOSUM62")
    inferred = gpualign.align(queries, targets, mode="local", scoring=blosum, task="path",
                              backend=backend)
    named = gpualign.align(queries, targets, mode="local", scoring=blosum, task="path",
                           alphabet="protein", backend=backend)
    assert inferred.alphabet == "protein"
    assert inferred.score.tolist() == named.score.tolist() and inferred.cigar == named.cigar
    # The matrix decides even where the sequences could be DNA.
    assert gpualign.align(["ACGT"], ["ACGT"], scoring=blosum, backend=backend).alphabet == \
        "protein"
    hits = gpualign.align_one_to_many(queries[0], UNIPROT, scoring=blosum, n=2,
                                      backend=backend)
    assert hits.alphabet == "protein" and hits.target_index[0] == 0


def test_selenocysteine_aligns_as_cysteine(backend):
    blosum = Scoring.matrix("BLOSUM62")
    with_u = gpualign.align([PEPTIDE[:20] + "U" + PEPTIDE[20:]], [PEPTIDE[:20] + "C" +
                            PEPTIDE[20:]], scoring=blosum, task="path", backend=backend)
    assert with_u.cigar == [f"{len(PEPTIDE) + 1}="]


def test_results_carry_the_alphabet(proteins, backend):
    subjects = [sequence for _, sequence in proteins[:5]]
    assert gpualign.edit_distance_matrix(subjects, subjects, k=10,
                                         backend=backend).alphabet == "protein"
    assert gpualign.edit_distance(subjects, subjects, backend=backend).alphabet == "protein"
    pairs = gpualign.allpairs(subjects + subjects[:1], min_identity=1.0, backend=backend)
    assert pairs.alphabet == "protein" and len(pairs) == 1
    assert gpualign.allpairs(["ACGT", "ACGU"], min_identity=1.0, backend=backend).alphabet == \
        "dna"
    assert gpualign.edit_distance(["héllo"], ["hello"], backend=backend).alphabet == "bytes"


def test_both_sides_share_one_alphabet(backend):
    # ACGT alone would be DNA; with protein targets it is protein, whose N matches N.
    result = gpualign.edit_distance(["NNNN"], ["NNNNMEEPQSDPSVEPPLSQ"], mode="infix",
                                    backend=backend)
    assert result.alphabet == "protein" and result.distance.tolist() == [0]
    encoded = SequenceSet.from_sequences([PEPTIDE], "protein")
    assert gpualign.lcs_top(encoded, ["ACGT"], 1, backend=backend).alphabet == "protein"
    dna_set = SequenceSet.from_sequences(["ACGT"])
    with pytest.raises(ValueError, match="queries are dna but targets are protein"):
        gpualign.edit_distance(dna_set, encoded, backend=backend)


# --- MEMs: invalid= on both sides, nucleotides only ------------------------------------------


def test_find_mems_applies_invalid_to_the_reference(backend):
    reference = ["ACGTACGTACGTTTGACCA", "GGGGACGTRACGTACG"]
    reads = ["ACGTACGTACGT"]
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'1' \(#1\).*'R' at position 8"):
        gpualign.find_mems(reference, reads, min_length=5, invalid="error", backend=backend)
    with pytest.raises(gpualign.InvalidSymbolError, match="'R' at position 8"):
        gpualign.build_index(reference, invalid="error", backend=backend)
    wildcard = gpualign.find_mems(reference, reads, min_length=5, strands="forward",
                                  backend=backend)
    assert set(wildcard.reference_index.tolist()) == {0, 1}


def test_find_mems_reads_rna(backend):
    reference = ["TTTT" + DNA + "GGGG"]
    rna = gpualign.find_mems(reference, [RNA], min_length=10, strands="forward",
                             backend=backend)
    dna = gpualign.find_mems(reference, [DNA], min_length=10, strands="forward",
                             backend=backend)
    assert rna.length.tolist() == dna.length.tolist() == [len(DNA)]
    assert rna.reference_pos.tolist() == dna.reference_pos.tolist() == [4]


def test_find_mems_refuses_protein(backend, tmp_path):
    with pytest.raises(ValueError, match="reference: looks like protein, MEMs are for DNA"):
        gpualign.build_index([PEPTIDE], backend=backend)
    with pytest.raises(ValueError, match="queries: looks like protein, MEMs are for DNA"):
        gpualign.find_mems([DNA], iter([PEPTIDE]), min_length=5, backend=backend)
    with pytest.raises(ValueError, match=f"{UNIPROT}: looks like protein"):
        gpualign.find_mems(UNIPROT, [DNA], min_length=5, backend=backend)
    with pytest.raises(ValueError, match="looks like protein"):
        gpualign.find_mems([DNA], SequenceSet.from_sequences([PEPTIDE], "protein"),
                           backend=backend)
    with pytest.raises(ValueError, match="reference: looks like neither DNA nor protein"):
        gpualign.build_index(["hello, world"], backend=backend)


# --- the command line ------------------------------------------------------------------------


def test_cli_lcs_of_proteins_without_naming_the_alphabet(proteins, tmp_path, capsys):
    name, query = proteins[42]
    query_file = write_fasta(tmp_path / "proteins.fa", [(name, query)])
    assert main(["lcs", str(query_file), str(UNIPROT), "--top", "2", "--no-strings",
                 "--backend", "cpu"]) == 0
    captured = capsys.readouterr()
    rows = [line.split("\t") for line in captured.out.splitlines()[1:]]
    assert rows[0][:4] == [name, name, "1", str(len(query))]
    summary = summary_line(captured.err)
    assert "alphabet protein (inferred) (backend cpu)" in summary
    assert main(["lcs", str(query_file), str(UNIPROT), "--alphabet", "protein",
                 "--backend", "cpu"]) == 0
    assert "alphabet protein (backend cpu)" in summary_line(capsys.readouterr().err)


def test_cli_edit_of_rna_against_dna(tmp_path, capsys):
    queries = write_fasta(tmp_path / "rna.fa", [("r", RNA)])
    targets = write_fasta(tmp_path / "dna.fa", [("d", DNA)])
    assert main(["edit", str(queries), str(targets), "--task", "path"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1].split("\t") == ["r", "d", "0", "0", str(len(DNA)),
                                                        f"{len(DNA)}="]
    assert "alphabet dna (inferred)" in summary_line(captured.err)


def test_cli_matrix_implies_protein(tmp_path, capsys):
    queries = write_fasta(tmp_path / "q.fa", [("q", "ACGTW")])
    assert main(["align", str(queries), str(queries), "--matrix", "BLOSUM62",
                 "--backend", "cpu"]) == 0
    captured = capsys.readouterr()
    blosum = Scoring.matrix("BLOSUM62")
    expected = sum(blosum.score(c, c) for c in "ACGTW")
    assert captured.out.splitlines()[1].split("\t")[3] == str(expected)
    assert "alphabet protein (inferred)" in summary_line(captured.err)


def test_cli_allpairs_of_proteins(proteins, tmp_path, capsys):
    seqs = write_fasta(tmp_path / "seqs.fa", proteins[:4] + [("copy", proteins[0][1])])
    assert main(["allpairs", str(seqs), "--min-identity", "1", "--backend", "cpu"]) == 0
    captured = capsys.readouterr()
    assert [row.split("\t")[:2] for row in captured.out.splitlines()[1:]] == [
        [proteins[0][0], "copy"]]
    assert "alphabet protein (inferred)" in summary_line(captured.err)


def test_cli_mems_refuses_a_protein_reference(tmp_path, capsys):
    reads = write_fasta(tmp_path / "reads.fa", [("r", DNA)])
    assert main(["mems", str(UNIPROT), str(reads)]) == 2
    err = capsys.readouterr().err
    assert err == f"gpualign: error: {UNIPROT}: looks like protein, MEMs are for DNA\n"
    assert main(["index", str(UNIPROT), "-o", str(tmp_path / "p.gpuidx")]) == 2
    assert "looks like protein" in capsys.readouterr().err


def test_cli_alphabet_choices_list_auto(capsys):
    assert main(["edit", "--help"]) == 0
    assert "{auto,dna,protein,bytes}" in capsys.readouterr().out


def test_inference_needs_only_the_first_records(tmp_path):
    # Later records do not change the decision: 1,000 DNA records, then a protein.
    records = [(f"s{i}", DNA) for i in range(1000)] + [("p", PEPTIDE)]
    path = write_fasta(tmp_path / "many.fa", records)
    assert resolve_alphabet("auto", path)[0].name == "dna"
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'p' \(#1000\)"):
        gpualign.lcs_length(DNA, path, backend="cpu")
    assert resolve_alphabet("auto", [DNA] * 1000 + [PEPTIDE] * 5000)[0].name == "dna"
