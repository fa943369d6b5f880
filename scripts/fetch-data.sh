#!/usr/bin/env bash
# Download the real datasets used by examples/ and benchmarks/ into ./data/ (git-ignored).
#
# Every file comes from a Debian package (no other network access is needed):
#   iva 1.0.11+ds-3              HIV DQ234790 reference (9,056 bp) + 38,056 pairs of MiSeq reads
#   parsinsert-testdata 1.04-12  RDP 16S core set (10,143 aligned 16S rRNA sequences)
#   ragout-examples 2.3-4        E. coli K-12 MG1655 genome (4,639,675 bp) and DH1 (4,630,707 bp)
#   wtdbg2-examples 2.5-9        16,890 E. coli PacBio RS II reads (mean 8.2 kb) + their reference
#   mmseqs2-examples             20,000 UniProt proteins (mean 453 aa) + 500 query proteins
#
# Usage: scripts/fetch-data.sh [DATA_DIR]     (default: ./data)
# The benchmarks and examples/make_examples.py take the same folder as --data-dir (default: data/
# of the checkout).
# Idempotent: files already present are kept; packages are only downloaded when a file is missing.
set -euo pipefail

data_dir=${1:-data}
mkdir -p "$data_dir"
data_dir=$(cd "$data_dir" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
updated=0

# download PKG: fetch PKG's .deb into $work and unpack it into $work/PKG/
download() {
    local pkg=$1
    [[ -d "$work/$pkg" ]] && return 0
    echo "fetch-data: downloading Debian package $pkg" >&2
    if ! (cd "$work" && apt-get download "$pkg" >/dev/null 2>&1); then
        if [[ $updated -eq 0 ]]; then
            echo "fetch-data: apt-get download failed; running apt-get update once" >&2
            apt-get update -qq >/dev/null || true
            updated=1
        fi
        (cd "$work" && apt-get download "$pkg")
    fi
    mkdir -p "$work/$pkg"
    dpkg-deb -x "$work/${pkg}"_*.deb "$work/$pkg"
    version=$(dpkg-deb -f "$work/${pkg}"_*.deb Version)
    echo "fetch-data: $pkg $version" >&2
    echo "$version" >"$work/$pkg.version"
}

# fetch PKG PATH_IN_PACKAGE DEST_NAME: copy one file of PKG to $data_dir/DEST_NAME unless present
fetch() {
    local pkg=$1 src=$2 dest=$data_dir/$3
    if [[ -s "$dest" ]]; then
        echo "fetch-data: $dest present, skipped" >&2
        return 0
    fi
    download "$pkg"
    cp "$work/$pkg/$src" "$dest.part"
    mv "$dest.part" "$dest"
    # SOURCES.tsv: which Debian package and version each file came from
    printf '%s\t%s\t%s\t%s\n' "$3" "$pkg" "$(cat "$work/$pkg.version")" "$src" \
        >>"$data_dir/SOURCES.tsv"
    echo "fetch-data: wrote $dest" >&2
}

iva=usr/lib/python3/dist-packages/iva/test_run_data
fetch iva "$iva/reference.fasta" hiv_reference.fasta
fetch iva "$iva/reads_1.fq.gz" hiv_reads_1.fq.gz
fetch iva "$iva/reads_2.fq.gz" hiv_reads_2.fq.gz

rdp=usr/share/doc/parsinsert/test_data
fetch parsinsert-testdata "$rdp/core_rdp.fasta.gz" core_rdp.fasta.gz
fetch parsinsert-testdata "$rdp/set1000.fasta.gz" rdp_set1000.fasta.gz
fetch parsinsert-testdata "$rdp/rdp.taxonomy.gz" rdp.taxonomy.gz

fetch ragout-examples usr/share/doc/ragout/examples/E.Coli/references/MG1655-K12.fasta.gz \
    ecoli_MG1655.fasta.gz
fetch ragout-examples usr/share/doc/ragout/examples/E.Coli/references/DH1.fasta.gz \
    ecoli_DH1.fasta.gz

# fetch_from_tar PKG TARBALL MEMBER DEST_NAME [gzip]: one member of a tarball inside PKG
fetch_from_tar() {
    local pkg=$1 tarball=$2 member=$3 dest=$data_dir/$4 compress=${5:-}
    if [[ -s "$dest" ]]; then
        echo "fetch-data: $dest present, skipped" >&2
        return 0
    fi
    download "$pkg"
    if [[ -n "$compress" ]]; then
        tar -xzOf "$work/$pkg/$tarball" "$member" | gzip -c >"$dest.part"
    else
        tar -xzOf "$work/$pkg/$tarball" "$member" >"$dest.part"
    fi
    mv "$dest.part" "$dest"
    printf '%s\t%s\t%s\t%s\n' "$4" "$pkg" "$(cat "$work/$pkg.version")" "$tarball:$member" \
        >>"$data_dir/SOURCES.tsv"
    echo "fetch-data: wrote $dest" >&2
}

wtdbg2=usr/share/doc/wtdbg2-examples/selfSampleData.tar.gz
fetch_from_tar wtdbg2-examples "$wtdbg2" selfSampleData/pacbio_filtered.fastq \
    ecoli_pacbio.fastq.gz gzip
fetch_from_tar wtdbg2-examples "$wtdbg2" selfSampleData/reference.fasta \
    ecoli_pacbio_reference.fasta

mmseqs=usr/share/doc/mmseqs2/example-data
fetch mmseqs2-examples "$mmseqs/DB.fasta.gz" uniprot_db.fasta.gz
fetch mmseqs2-examples "$mmseqs/QUERY.fasta.gz" uniprot_queries.fasta.gz

echo "fetch-data: done; files in $data_dir:" >&2
ls -l "$data_dir" >&2
