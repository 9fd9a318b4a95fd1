import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One run of the scheduled report. `jobId` is unique: a fire run twice reports once. */
@Entity('reports')
export class Report {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('integer', { unique: true })
  jobId!: number;

  @Column('integer')
  orders!: number;

  @Column('integer')
  deliveries!: number;

  @CreateDateColumn()
  createdAt!: Date;
}
